"""How often the legacy-encoding guess (`k0maru_common._encodings`) reads a note right.

Every passage of zh_cmrc2018 (Simplified) is written in GBK, and its Traditional form (OpenCC's
s2t, from the retriever's environment) in Big5 and in GBK; whole passages and random cuts of
4–20 and 20–80 characters. Python's own CJK codec samples (Japanese, Korean), when this Python
ships them, and random bytes without NUL. Each row counts what `read_text` said: the right
encoding, another one, U+FFFD repairs, or unreadable (`FAIL`). `--labelled DIR`: also every
file of a corpus whose folders are named by encoding (chardet's `tests/`: web pages in 50
encodings), one row a folder. `--gettext DIR`: the translations of every program on this machine
(`/usr/share/locale/<lang>/LC_MESSAGES/*.mo`), notes of 20 messages and cuts of 20–80 characters
of them, in each language's Windows encoding (and KOI8-R, CP866, ISO 8859-2 for some), one row a
language and encoding. A read counts as right when it gives the text written, whatever name the
guess gave (Western text with only `é` reads the same in Windows-1252 and Windows-1250); a read
that gives other text is counted as `wrong`.

    .venv/bin/python bench/encoding_guess.py [--data ../shared/data/beir/zh_cmrc2018] [--labelled DIR]
        [--gettext /usr/share/locale] [--skip-chinese]
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import gettext
import json
import random
import sysconfig
import time
from collections import Counter
from pathlib import Path

from k0maru_common import read_text


def what(data: bytes, truth: str | None = None) -> str:
    """What `read_text` made of `data`; with `truth`, "right" or "wrong <encoding>" instead of the
    encoding's name."""
    try:
        text, how = read_text(data)
    except UnicodeDecodeError:
        return "FAIL"
    if not how:
        return "no guess (valid UTF-8, or a byte order mark)"
    if not how.startswith("not UTF-8"):
        return "U+FFFD repair"
    name = how.split(",")[0].removeprefix("not UTF-8: read as ")
    if truth is None:
        return name
    return "right" if text == truth else f"wrong {name}"


def cuts(texts: list[str], low: int, high: int, rng: random.Random, n: int = 2000) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        text = rng.choice(texts)
        size = rng.randint(low, high)
        start = rng.randint(0, max(0, len(text) - size))
        out.append(text[start : start + size])
    return out


def row(label: str, texts: list[str], codec: str) -> None:
    started = time.perf_counter()
    encoded = [t.encode(codec, "replace") for t in texts]
    counts = Counter(what(data) for data in encoded if not data.isascii())
    ms = (time.perf_counter() - started) * 1000 / max(1, sum(counts.values()))
    print(f"| {label} | {sum(counts.values())} | {_shown(counts)} | {ms:.2f} |")


# gettext's languages, and the encodings their notes were saved in on Windows (and Unix)
GETTEXT_CODECS = {
    **{lang: ("cp1251",) for lang in ("uk", "be", "bg", "sr", "mk")},
    "ru": ("cp1251", "koi8_r", "cp866"),
    **{lang: ("cp1250",) for lang in ("sk", "hu", "hr", "sl", "ro")},
    "pl": ("cp1250", "iso8859_2"),
    "cs": ("cp1250", "iso8859_2"),
    "tr": ("cp1254",),
    "el": ("cp1253",),
    **{lang: ("cp1252",) for lang in ("de", "fr", "es", "pt", "it", "nl", "da", "sv", "fi", "is", "ca")},
    **{lang: ("cp1257",) for lang in ("lt", "lv", "et")},
    "he": ("cp1255",),
    "ar": ("cp1256",),
    "fa": ("cp1256",),  # Persian's `ی` as Arabic's `ي`, as Windows-1256 holds it
    "th": ("cp874",),
    "ko": ("cp949",),
    "zh_CN": ("gbk",),
    "ja": ("cp932",),
}
# Windows-1250 has Romanian's letters with a cedilla, the older spelling; Windows-1256 has no
# Persian `ی` (Persian Windows wrote `ي`)
_SPELLINGS = str.maketrans("șțȘȚی", "şţŞŢي")


def translations(folder: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.glob("LC_MESSAGES/*.mo")):
        try:
            with path.open("rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        out.extend(v for k, v in catalog.items() if k and isinstance(v, str) and v.strip() and v != k)
    return out


def gettext_rows(locales: Path, rng: random.Random) -> None:
    print("\n| language, encoding | notes of 20 messages | cuts of 20–80 characters |\n|---|---|---|")
    for lang, codecs_ in GETTEXT_CODECS.items():
        messages = [m.translate(_SPELLINGS) for m in translations(locales / lang)]
        if not messages:
            continue
        notes = ["\n".join(rng.sample(messages, min(20, len(messages)))) for _ in range(300)]
        short = cuts(notes, 20, 80, rng, 500)
        for codec in codecs_:
            cells = []
            for texts in (notes, short):
                counts: Counter[str] = Counter()
                for text in texts:
                    data = text.encode(codec, "replace")
                    if not data.isascii():
                        counts[what(data, data.decode(codec))] += 1
                cells.append(_shown(counts))
            print(f"| {lang}, {codec} | {cells[0]} | {cells[1]} |")


# a folder's encoding, and the superset the guess reads it with (Windows' own extensions)
_SUPERSETS = {"gb2312": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949", "iso8859-1": "cp1252"}


def _label_codec(folder: str) -> str | None:
    """The codec a chardet test folder is named by (`windows-1250-czech` → cp1250)."""
    parts = folder.split("-")
    for end in range(len(parts), 0, -1):
        try:
            name = codecs.lookup("-".join(parts[:end])).name
        except LookupError:
            continue
        return _SUPERSETS.get(name, name)
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/data/beir/zh_cmrc2018"))
    parser.add_argument("--labelled", type=Path, help="a folder of folders named by encoding (chardet's tests/)")
    parser.add_argument("--gettext", type=Path, help="a locale folder (/usr/share/locale)")
    parser.add_argument("--skip-chinese", action="store_true", help="leave out zh_cmrc2018 and Python's samples")
    args = parser.parse_args()
    rng = random.Random(1)
    if not args.skip_chinese:
        chinese(args.data, rng)
    if args.labelled is not None:
        labelled_rows(args.labelled)
    if args.gettext is not None:
        gettext_rows(args.gettext, rng)


def labelled_rows(corpus: Path) -> None:
    print("\n| labelled folder | files not UTF-8 | read as |\n|---|---|---|")
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        codec = _label_codec(folder.name)
        counts: Counter[str] = Counter()
        for f in sorted(folder.iterdir()):
            data = f.read_bytes() if f.is_file() else b""
            if data and not _utf8(data):
                truth = None
                if codec is not None:
                    with contextlib.suppress(UnicodeDecodeError):
                        truth = data.decode(codec)
                counts[what(data, truth)] += 1
        if counts:
            print(f"| {folder.name} | {sum(counts.values())} | {_shown(counts)} |")


def _shown(counts: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.most_common())


def chinese(data: Path, rng: random.Random) -> None:
    simplified = [json.loads(line)["text"] for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    from opencc import OpenCC  # type: ignore[import-untyped]  # the retriever's dependency

    traditional = [OpenCC("s2t").convert(t) for t in simplified]
    print("| text | files | read as | ms per file |\n|---|---|---|---|")
    row("Simplified passages, GBK", simplified, "gbk")
    row("Traditional passages, Big5", traditional, "big5")
    row("Traditional passages, GBK", traditional, "gbk")
    for low, high in ((4, 20), (20, 80)):
        row(f"Simplified {low}–{high} chars, GBK", cuts(simplified, low, high, rng), "gbk")
        row(f"Traditional {low}–{high} chars, Big5", cuts(traditional, low, high, rng), "big5")
    samples = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    for name, codec in (("shift_jis", "cp932"), ("euc_jp", "cp932"), ("euc_kr", "cp949")):
        if (samples / f"{name}-utf8.txt").exists():
            lines = [ln for ln in (samples / f"{name}-utf8.txt").read_text("utf-8").splitlines() if ln.strip()]
            row(f"Python's {name} sample, lines, {codec}", lines, codec)
            row(f"Python's {name} sample, 4–20 chars, {codec}", cuts(lines, 4, 20, rng, 500), codec)
    for size in (8, 40, 200, 1000):
        noise = [rng.randbytes(size).replace(b"\x00", b"\x01") for _ in range(1000)]
        counts = Counter(what(b) for b in noise)
        print(f"| random bytes, {size} | 1000 | {_shown(counts)} | |")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


if __name__ == "__main__":
    main()

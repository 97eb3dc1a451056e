"""How often the legacy-encoding guess (`k0maru_common._encodings`) reads a note right.

Every passage of zh_cmrc2018 (Simplified) is written in GBK, and its Traditional form (OpenCC's
s2t, from the retriever's environment) in Big5 and in GBK; whole passages and random cuts of
4–20 and 20–80 characters. Python's own CJK codec samples (Japanese, Korean), when this Python
ships them, and random bytes without NUL. Each row counts what `read_text` said: the right
encoding, another one, U+FFFD repairs, or unreadable (`FAIL`). `--labelled DIR`: also every
file of a corpus whose folders are named by encoding (chardet's `tests/`: web pages in 50
encodings), one row a folder.

    .venv/bin/python bench/encoding_guess.py [--data ../shared/data/beir/zh_cmrc2018] [--labelled DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sysconfig
import time
from collections import Counter
from pathlib import Path

from k0maru_common import read_text


def what(data: bytes) -> str:
    try:
        _text, how = read_text(data)
    except UnicodeDecodeError:
        return "FAIL"
    if not how:
        return "no guess (valid UTF-8, or a byte order mark)"
    return how.split(",")[0].removeprefix("not UTF-8: read as ") if how.startswith("not UTF-8") else "U+FFFD repair"


def cuts(texts: list[str], low: int, high: int, rng: random.Random, n: int = 2000) -> list[str]:
    out = []
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
    print(f"| {label} | {sum(counts.values())} | {', '.join(f'{k} {v}' for k, v in counts.most_common())} | {ms:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/data/beir/zh_cmrc2018"))
    parser.add_argument("--labelled", type=Path, help="a folder of folders named by encoding (chardet's tests/)")
    args = parser.parse_args()
    rng = random.Random(1)
    simplified = [json.loads(line)["text"] for line in (args.data / "corpus.jsonl").open(encoding="utf-8")]
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
        print(f"| random bytes, {size} | 1000 | {', '.join(f'{k} {v}' for k, v in counts.most_common())} | |")
    if args.labelled is not None:
        print("\n| labelled folder | files not UTF-8 | read as |\n|---|---|---|")
        for folder in sorted(p for p in args.labelled.iterdir() if p.is_dir()):
            datas = [f.read_bytes() for f in sorted(folder.iterdir()) if f.is_file()]
            counts = Counter(what(d) for d in datas if not _utf8(d))
            if counts:
                print(
                    f"| {folder.name} | {sum(counts.values())} | {', '.join(f'{k} {v}' for k, v in counts.most_common())} |"
                )


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


if __name__ == "__main__":
    main()

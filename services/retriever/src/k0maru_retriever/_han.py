"""Han segmentation: jieba's search mode over jieba's own dictionary, loaded by first character.

`jieba.initialize()` unmarshals its whole prefix dictionary (498k entries: 1.4 s of CPU on a
2-core machine) before it segments a word, and the retriever met it on its health path whenever
a vault holds a Chinese note. Segmenting a text only ever looks up dictionary keys that start
with one of the text's own characters (`get_DAG` walks forward from each position;
`cut_for_search`'s 2- and 3-grams and the HMM fallback's buffers lie inside the text), so the
dictionary is kept grouped by first character, and a character's words (with the prefixes
jieba derives from them) enter the tokenizer the first time a text holds that character. The
entries are the very ones `gen_pfdict` makes, in the same order, so the words are jieba's
(tests compare with `jieba.lcut_for_search`).

The grouped dictionary is built once from jieba's `dict.txt` (about as long as jieba's own
first load) and cached as a marshal file in `$XDG_CACHE_HOME/k0maru` (~/.cache/k0maru); an
unwritable cache only means it is built again next time.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import marshal
import os
import re
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_FORMAT = 1  # bump when the cached layout changes
# Han characters (a character class): CJK unified ideographs, extension A, compatibility ideographs
HAN_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_ONLY = re.compile(f"[{HAN_CHARS}]+")  # a word of Han characters (a run's)
SEGMENT_CHARS = 256  # the longest piece of a Han run jieba reads at once (`HanSegmenter.segment`)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "k0maru"


def _group_dictionary(raw: bytes) -> tuple[dict[str, str], int]:
    """jieba's dict.txt ("word freq [tag]" lines) as {first character: its lines}, and the total."""
    groups: dict[str, list[str]] = {}
    total = 0
    for line in raw.decode("utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        word, freq = line.split(" ")[:2]
        total += int(freq)
        groups.setdefault(word[0], []).append(f"{word} {freq}")
    return {char: "\n".join(lines) for char, lines in groups.items()}, total


class HanSegmenter:
    """jieba's `lcut_for_search` with the dictionary loaded per character on first use."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._cache_dir = cache_dir or _cache_dir()
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._groups: dict[str, str] = {}
        self._loaded: set[str] = set()

    def _open(self) -> Any:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        tokenizer = jieba.Tokenizer()
        with tokenizer.get_dict_file() as f:
            raw = f.read()
        cache = self._cache_dir / f"jieba-{jieba.__version__}-{len(raw)}-by-char.v{_FORMAT}.marshal"
        groups_total: tuple[dict[str, str], int] | None = None
        try:
            groups_total = marshal.loads(cache.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            groups_total = None
        if groups_total is None:
            groups_total = _group_dictionary(raw)
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(marshal.dumps(groups_total))
                tmp.replace(cache)
            except OSError as exc:
                log.info("jieba dictionary cache not written (%s); it is built again next time", exc)
        self._groups, tokenizer.total = groups_total
        tokenizer.FREQ = {}
        tokenizer.initialized = True  # FREQ is filled per character below, never by initialize()
        return tokenizer

    def _load_characters(self, text: str) -> Any:
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = self._open()
            tokenizer = self._tokenizer
            freq: dict[str, int] = tokenizer.FREQ
            for char in set(text) - self._loaded:
                for line in self._groups.get(char, "").splitlines():  # gen_pfdict, for this character
                    word, count = line.split(" ")
                    freq[word] = int(count)
                    for end in range(1, len(word)):
                        freq.setdefault(word[:end], 0)
                self._loaded.add(char)
            return tokenizer

    def segment(self, run: str) -> list[str]:
        """Search-mode words of a run of Han characters (sub-words included), read in Simplified
        characters (`simplified`). A run longer than SEGMENT_CHARS is cut in pieces of that many:
        jieba's HMM, which reads characters no dictionary word covers, copies its path at each
        character (time squared: 20,000 of `中` took 1.1 s, a chat's 600 KB of `啊` would take
        minutes). Text has punctuation long before that; a word cut at a piece's end is two."""
        run = simplified(run)
        tokenizer = self._load_characters(run)
        return [
            w
            for start in range(0, len(run), SEGMENT_CHARS)
            for w in tokenizer.lcut_for_search(run[start : start + SEGMENT_CHARS])
            if w.strip()
        ]


_SIMPLIFIED: tuple[dict[int, str], dict[str, str], dict[str, tuple[int, ...]]] | None = None
_SIMPLIFIED_LOCK = threading.Lock()


def simplified(run: str) -> str:
    """`run` in Simplified characters and mainland words, from OpenCC's tables: Taiwan's words for
    the things software is made of first (`TWPhrasesRev.txt`: `資料庫` → `數據庫`, `網路` →
    `網絡`, `伺服器` → `服務器`, the longest that starts at each character), then each
    Traditional character as the character table first gives it (`TSCharacters.txt`: `數據庫`
    → `数据库`). A team writes both scripts (Taiwan and Hong Kong beside the mainland): read
    alike, a query in one finds notes in the other, and jieba, whose dictionary is Simplified,
    cuts Traditional text into its words. A character with one simplified form per meaning is
    read by its first (`乾` → `干`), and `程式` is `程序` inside `方程式` too; index and queries
    read them alike. Taiwan's words are looked for only in a run that holds a Traditional
    character. Without the tables (their package missing): the run as it is."""
    global _SIMPLIFIED
    if _SIMPLIFIED is None:
        with _SIMPLIFIED_LOCK:
            if _SIMPLIFIED is None:
                _SIMPLIFIED = _tables()
    characters, words, starts = _SIMPLIFIED
    converted = run.translate(characters)
    if converted == run:  # no Traditional character: Taiwan's words are not looked for (`程序`
        return run  # is a process in Taiwan, a program on the mainland)
    if not starts.keys().isdisjoint(run):
        converted = _mainland_words(run, words, starts).translate(characters)
    return converted


@functools.lru_cache(maxsize=1 << 16)
def simplified_name(name: str) -> str:
    """`simplified`, remembered: for names (a note's, a folder's, a tag's), which a vault repeats
    over and over (a cold load of 200,000 links among 10,000 Chinese names: 1.19 s converting
    each, 0.93 s remembered, 0.89 s with no conversion), not for text, which it does not."""
    return simplified(name)


def _mainland_words(run: str, words: dict[str, str], starts: dict[str, tuple[int, ...]]) -> str:
    out: list[str] = []
    i, n = 0, len(run)
    while i < n:
        for length in starts.get(run[i], ()):  # longest first
            target = words.get(run[i : i + length])
            if target is not None:
                out.append(target)
                i += length
                break
        else:
            out.append(run[i])
            i += 1
    return "".join(out)


def _tables() -> tuple[dict[int, str], dict[str, str], dict[str, tuple[int, ...]]]:
    spec = importlib.util.find_spec("opencc")  # its data files only: the package is not imported
    origin = spec.origin if spec is not None else None
    if origin is None:
        log.warning("opencc-python-reimplemented is not installed: Traditional text is read as written")
        return {}, {}, {}
    folder = Path(origin).parent / "dictionary"
    characters: dict[int, str] = {}
    words: dict[str, str] = {}
    try:
        for line in (folder / "TSCharacters.txt").read_text("utf-8").splitlines():
            source, _, targets = line.partition("\t")
            first = targets.split(" ", 1)[0]
            if len(source) == 1 and len(first) == 1 and first != source:
                characters[ord(source)] = first
        for line in (folder / "TWPhrasesRev.txt").read_text("utf-8").splitlines():
            source, _, targets = line.partition("\t")
            first = targets.split(" ", 1)[0]
            if len(source) > 1 and first and _HAN_ONLY.fullmatch(source):
                words[source] = first
    except OSError as exc:
        log.warning("OpenCC's tables are unreadable (%s): Traditional text is read as written", exc)
        return {}, {}, {}
    lengths: dict[str, set[int]] = {}
    for source in words:
        lengths.setdefault(source[0], set()).add(len(source))
    starts = {char: tuple(sorted(found, reverse=True)) for char, found in lengths.items()}
    return characters, words, starts

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

import importlib.util
import logging
import marshal
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_FORMAT = 1  # bump when the cached layout changes


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
        characters (`simplified`)."""
        run = simplified(run)
        tokenizer = self._load_characters(run)
        return [w for w in tokenizer.lcut_for_search(run) if w.strip()]


_SIMPLIFIED: dict[int, str] | None = None
_SIMPLIFIED_LOCK = threading.Lock()


def simplified(run: str) -> str:
    """`run` in Simplified characters: each Traditional character as OpenCC's character table
    (`TSCharacters.txt`) first gives it, `資料庫連線` → `资料库连线`. A team writes both scripts
    (Taiwan and Hong Kong beside the mainland): read alike, a query in one finds notes in the
    other, and jieba, whose dictionary is Simplified, cuts Traditional text into its words. A
    character with one simplified form per meaning is read by its first (`乾` → `干`); index and
    queries read it alike. Without the table (its package missing): the run as it is."""
    global _SIMPLIFIED
    if _SIMPLIFIED is None:
        with _SIMPLIFIED_LOCK:
            if _SIMPLIFIED is None:
                _SIMPLIFIED = _character_table()
    return run.translate(_SIMPLIFIED) if _SIMPLIFIED else run


def _character_table() -> dict[int, str]:
    spec = importlib.util.find_spec("opencc")  # its data file only: the package is not imported
    origin = spec.origin if spec is not None else None
    path = Path(origin).parent / "dictionary" / "TSCharacters.txt" if origin else None
    try:
        lines = path.read_text("utf-8").splitlines() if path is not None else []
    except OSError as exc:
        lines = []
        log.warning("OpenCC's character table is unreadable (%s): Traditional text is read as written", exc)
    if path is None:
        log.warning("opencc-python-reimplemented is not installed: Traditional text is read as written")
    table: dict[int, str] = {}
    for line in lines:
        source, _, targets = line.partition("\t")
        first = targets.split(" ", 1)[0]
        if len(source) == 1 and len(first) == 1 and first != source:
            table[ord(source)] = first
    return table

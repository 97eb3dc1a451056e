"""Writing systems of text, named as embedding models declare what they read (`EmbedderInfo.scripts`).

The launcher picks a vault's model from the letters of its notes, and the retriever leaves a
query out of the vector channel when the model cannot read its letters: the English default
model reads Latin letters only, so Korean, Japanese kana, Cyrillic, Arabic or Thai notes were
embedded into noise and fused into hybrid results as if they meant something.
"""

from __future__ import annotations

import re

# Runs of each script's letters, counted by deleting them (a Korean vault's sample holds millions
# of letters: a match object apiece cost seconds before any service could start).
SCRIPT_RUNS = {
    "han": re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"),
    "hangul": re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+"),
    "kana": re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+"),
    "cyrillic": re.compile(r"[\u0400-\u04ff]+"),
    "arabic": re.compile(r"[\u0600-\u06ff\u0750-\u077f]+"),
    "thai": re.compile(r"[\u0e00-\u0e7f]+"),
}
_LATIN_BEYOND_ASCII = re.compile(r"[\u00c0-\u024f]+")
# every byte that is not an ASCII letter: deleted by `bytes.translate` to count those in C
_NOT_ASCII_LETTER = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalpha())


def letters_by_script(text: str) -> dict[str, int]:
    """Letters of `text` per script ("latin" and the keys of `SCRIPT_RUNS`); letters of other
    scripts (Greek, Hebrew, Devanagari, …) are not counted for or against any model."""
    ascii_letters = len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTER))
    if text.isascii():
        return {"latin": ascii_letters}
    counts = {"latin": ascii_letters + _run_length(_LATIN_BEYOND_ASCII, text)}
    for script, runs in SCRIPT_RUNS.items():
        counts[script] = _run_length(runs, text)
    return counts


def unreadable_share(text: str, reads: tuple[str, ...]) -> float:
    """The share of `text`'s counted letters in scripts a model reading `reads` cannot read."""
    counts = letters_by_script(text)
    total = sum(counts.values())
    return sum(n for script, n in counts.items() if script not in reads) / total if total else 0.0


def _run_length(runs: re.Pattern[str], text: str) -> int:
    return len(text) - len(runs.sub("", text))  # in C: no match object per run

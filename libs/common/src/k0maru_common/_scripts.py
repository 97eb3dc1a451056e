"""Writing systems of text, named as embedding models declare what they read (`EmbedderInfo.scripts`).

The launcher picks a vault's model from the letters of its notes, and the retriever leaves a
query out of the vector channel when the model cannot read its letters: the English default
model reads Latin letters only, so Korean, Japanese kana, Cyrillic, Arabic or Thai notes were
embedded into noise and fused into hybrid results as if they meant something.
"""

from __future__ import annotations

import re

# Each script's letters, as one regex of named runs, which names each run's script (a Korean
# vault's sample holds millions of letters: a match object apiece cost seconds before any service
# could start; a pass per script cost an English vault's sample 5x more).
_SCRIPTS = {
    "latin": "\u00c0-\u024f",  # beyond ASCII (ASCII letters are counted on the bytes)
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff",
    "hangul": "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f",
    "kana": "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "cyrillic": "\u0400-\u04ff",
    "arabic": "\u0600-\u06ff\u0750-\u077f",
    "thai": "\u0e00-\u0e7f",
}
_RUNS = re.compile("|".join(f"(?P<{script}>[{letters}]+)" for script, letters in _SCRIPTS.items()))
# runs of any of them: one character class, which the regex engine scans for in C, where the
# named alternatives are tried at every position (an English vault's sample took 5x longer)
_ANY_RUN = re.compile(f"[{''.join(_SCRIPTS.values())}]+")
# every byte that is not an ASCII letter: deleted by `bytes.translate` to count those in C
_NOT_ASCII_LETTER = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalpha())


def letters_by_script(text: str) -> dict[str, int]:
    """Letters of `text` per script ("latin", "han", "hangul", "kana", "cyrillic", "arabic",
    "thai"); letters of other scripts (Greek, Hebrew, Devanagari, …) are not counted for or
    against any model."""
    counts = dict.fromkeys(_SCRIPTS, 0)
    counts["latin"] = len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTER))
    if not text.isascii():
        for mixed in _ANY_RUN.findall(text):
            for run in _RUNS.finditer(mixed):  # Japanese runs mix Han and kana
                counts[run.lastgroup or ""] += run.end() - run.start()
    return counts


UNREADABLE_SHARE = 0.3  # a text with this share of its letters in scripts a model cannot read is not its


def model_reads(text: str, reads: tuple[str, ...]) -> bool:
    """Whether a model that reads `reads` (empty: every script) reads `text`: under
    `UNREADABLE_SHARE` of its letters in other scripts (a query's vector channel, a tag's vector)."""
    return not reads or text.isascii() or unreadable_share(text, reads) < UNREADABLE_SHARE


def unreadable_share(text: str, reads: tuple[str, ...]) -> float:
    """The share of `text`'s counted letters in scripts a model reading `reads` cannot read."""
    counts = letters_by_script(text)
    total = sum(counts.values())
    return sum(n for script, n in counts.items() if script not in reads) / total if total else 0.0

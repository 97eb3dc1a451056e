"""The one definition of a token in k0maru, used for chunk budgets (scanner), the token ledger
and loadout budgets (offload), and the console's scoreboard.

A token is a run of up to 8 Latin letters, a run of up to 8 digits, or any other single
non-space character (so each Han character and each punctuation mark counts one). Counted in
one regex pass; close to cl100k/WordPiece counts for English prose, code and Chinese (where
the B.10 estimate of ⌈chars/4⌉ + ⌈2·CJK/3⌉ undercounts code and Chinese, and would let a
Chinese chunk overflow the embedder's 256-token window).
"""

from __future__ import annotations

import re

TOKEN_PATTERN = re.compile(r"[A-Za-z]{1,8}|\d{1,8}|[^\sA-Za-z\d]")


def estimate_tokens(text: str) -> int:
    """How many tokens `text` costs an agent's context (see the module docstring)."""
    return len(TOKEN_PATTERN.findall(text))


def _classes() -> bytes:
    """A bytes.translate table for ASCII: letters → a, digits → d, whitespace → space, any
    other character → x (by the same classes as TOKEN_PATTERN)."""
    out = bytearray(b"x" * 256)
    for i in range(128):
        c = chr(i)
        out[i] = ord(
            "a" if re.fullmatch("[A-Za-z]", c) else "d" if re.fullmatch(r"\d", c) else " " if c.isspace() else "x"
        )
    return bytes(out)


_CLASSES = _classes()
_STARTS = bytes(ord("T") if chr(i) in "ADx" else ord(".") for i in range(256))


def _token_starts(raw: bytes) -> bytes:
    """b" " + raw with one "T" per token of TOKEN_PATTERN (ASCII only). Each run of letters
    (digits) gets a mark on its first character and one more per further 8 characters; where
    inside its run does not matter, since callers count within whole runs."""
    view = b" " + raw.translate(_CLASSES)
    for before in (b" ", b"a", b"x"):
        view = view.replace(before + b"d", before + b"D")
    view = view.replace(b"dddddddd", b"Dddddddd")  # floor((n-1)/8) after the first digit
    for before in (b" ", b"d", b"D", b"x"):
        view = view.replace(before + b"a", before + b"A")
    view = view.replace(b"aaaaaaaa", b"Aaaaaaaa")
    return view.translate(_STARTS)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_STAND_INS: dict[str, str] = {}


def _stand_in(match: re.Match[str]) -> str:
    """An ASCII character TOKEN_PATTERN classes like this one: a (Unicode) digit, whitespace,
    or any other character (a token of its own; only ASCII letters form runs)."""
    char = match.group()
    found = _STAND_INS.get(char)
    if found is None:
        found = "0" if char.isdecimal() else " " if char.isspace() else "#"
        if len(_STAND_INS) < 4096:
            _STAND_INS[char] = found
    return found


def estimate_tokens_of_parts(text: str, parts: list[str]) -> list[int]:
    """`[estimate_tokens(p) for p in parts]` for consecutive parts that make up `text` and
    each end at a non-letter, non-digit character or at the text's end (sentences), so no
    letter or digit run crosses from one part into the next.

    ASCII text is marked once with bytes methods (C loops over the whole text) and each part
    counted with one `count`, instead of one regex pass per part: the chunker's sentence
    counts were a third of parsing a note."""
    if not text.isascii():
        if len(text.encode("utf-8", "surrogatepass")) - len(text) > len(text) // 8:  # mostly non-ASCII (Chinese)
            return [len(TOKEN_PATTERN.findall(p)) for p in parts]
        text = _NON_ASCII.sub(_stand_in, text)  # a few symbols: one ASCII character of the same class each
    starts = _token_starts(text.encode("ascii"))
    counts = []
    start = 1  # starts[0] is the leading space
    for part in parts:
        end = start + len(part)
        counts.append(starts.count(b"T", start, end))
        start = end
    return counts

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

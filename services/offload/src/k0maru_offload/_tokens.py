"""Token estimate (K0maru's loadout estimate, ALGORITHMS.md B.10), used for the ledger.

tokens ≈ ⌈non-CJK non-whitespace characters / 4⌉ + ⌈2 · CJK characters / 3⌉. Close to
cl100k for English prose and code; documented rather than exact.
"""

from __future__ import annotations

import math
import re

_CJK = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff]")
_SPACE = re.compile(r"\s")


def estimate_tokens(text: str) -> int:
    cjk = len(_CJK.findall(text))
    other = len(text) - len(_SPACE.findall(text)) - cjk
    return math.ceil(other / 4) + math.ceil(2 * cjk / 3)

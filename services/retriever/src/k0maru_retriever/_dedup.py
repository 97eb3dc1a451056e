"""ResidualDeduplicator: greedy novelty × relevance selection of results (ALGORITHMS.md A.11, intended).

Start from the candidate closest to the query; then repeatedly take the candidate whose vector
has the largest residual outside the span of those already taken (its novelty, ‖residual‖²),
times its relevance (score + 0.5). Stop when nothing left adds 1 % of new direction: the rest
are near-duplicates of what was taken. VCP's copy of this turned its basis into zeros
(Float32 → Uint8), so it never removed anything; this is the algorithm it meant.
"""

from __future__ import annotations

import numpy as np

MIN_CANDIDATES = 6  # with 5 or fewer, the list is returned as it is
MIN_NOVELTY = 0.01


def deduplicate(vectors: np.ndarray, scores: np.ndarray, query: np.ndarray, limit: int) -> list[int]:
    """Indices of the selected candidates, in selection order (at most `limit`).

    vectors: (n, D) candidate vectors; scores: relevance in [0, 1]; query: (D,).
    """
    n = len(vectors)
    if n < MIN_CANDIDATES:
        return list(range(min(n, limit)))
    v = vectors.astype(np.float64)
    norms = np.linalg.norm(v, axis=1)
    unit = v / np.maximum(norms, 1e-12)[:, None]
    qn = float(np.linalg.norm(query))
    cos = unit @ (query / qn) if qn > 1e-12 else np.zeros(n)
    anchor = int(np.argmax(cos))
    selected = [anchor]
    basis: list[np.ndarray] = []
    residual = v.copy()

    def add_to_basis(i: int) -> None:
        r = residual[i]
        norm = float(np.linalg.norm(r))
        if norm > 1e-9:
            u = r / norm
            basis.append(u)
            residual[:] -= np.outer(residual @ u, u)  # modified Gram-Schmidt, one direction at a time

    add_to_basis(anchor)
    relevance = scores.astype(np.float64) + 0.5
    while len(selected) < limit:
        novelty = np.einsum("ij,ij->i", residual, residual)
        gain = novelty * relevance
        gain[selected] = -1.0
        best = int(np.argmax(gain))
        if gain[best] < MIN_NOVELTY:
            break
        selected.append(best)
        add_to_basis(best)
    return selected

"""HttpEmbedder: an OpenAI-compatible `/embeddings` endpoint (OpenAI, Gemini's OpenAI API, vLLM, …).

Vectors are matched to texts by the `index` each item carries, never by position, so a
reordered or short answer can never attach a vector to the wrong text (VCP's loop shifts
every later vector when one item fails). 429 and 5xx are retried with exponential backoff
and jitter; when a batch is refused (400/413/422, e.g. one oversized input), its items are
sent one by one so that only the bad one fails, with its own error.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from k0maru_common import DependencyFailed, InvalidInput

from ._model import normalise_text
from ._presets import ModelPreset

log = logging.getLogger(__name__)
RETRY_STATUS = {429, 500, 502, 503, 504}
SPLIT_STATUS = {400, 413, 422}


@dataclass(frozen=True)
class HttpSettings:
    base_url: str
    model: str
    api_key: str = ""
    dimension: int = 0
    batch_size: int = 64
    max_retries: int = 5
    timeout_s: float = 60.0


class ItemFailed(InvalidInput):
    """One text the endpoint refused; the others of its batch are unaffected."""


class HttpEmbedder:
    def __init__(self, settings: HttpSettings, client: httpx.Client | None = None) -> None:
        if not settings.base_url or not settings.model or not settings.dimension:
            raise InvalidInput("the http model needs K0_HTTP_BASE_URL, K0_HTTP_MODEL and K0_DIMENSION")
        self.settings = settings
        remote = Path(settings.base_url)  # no local files: the preset only names the model
        self.preset = ModelPreset(
            name=f"http-{settings.model}",
            model_path=remote,
            tokenizer_path=remote,
            dimension=settings.dimension,
            pooling="remote",
            scripts=(),
        )
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._client = client or httpx.Client(
            base_url=settings.base_url.rstrip("/"), headers=headers, timeout=settings.timeout_s
        )

    def embed(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        prepared = [normalise_text(t) for t in texts]
        if any(not t for t in prepared):
            raise InvalidInput("cannot embed empty text")
        out = np.zeros((len(prepared), self.settings.dimension), dtype=np.float32)
        for start in range(0, len(prepared), self.settings.batch_size):
            batch = prepared[start : start + self.settings.batch_size]
            out[start : start + len(batch)] = self._batch(batch)
        return out

    def interrupt(self) -> None:
        """Nothing to end here: a request under way ends by its own timeout."""

    def embed_each(self, texts: list[str]) -> list[np.ndarray | Exception]:
        """One result per text: a vector, or the error of that text alone."""
        results: list[np.ndarray | Exception] = []
        for text in texts:
            try:
                results.append(self.embed([text])[0])
            except (InvalidInput, DependencyFailed) as exc:
                results.append(exc)
        return results

    def _batch(self, batch: list[str]) -> np.ndarray:
        try:
            return self._request(batch)
        except ItemFailed:
            if len(batch) == 1:
                raise
        rows = []  # the batch was refused: find the culprit, fail it alone
        failures = []
        for i, text in enumerate(batch):
            try:
                rows.append(self._request([text])[0])
            except ItemFailed as exc:
                failures.append(f"item {i}: {exc}")
                rows.append(np.full(self.settings.dimension, np.nan, dtype=np.float32))
        if failures:
            raise ItemFailed("; ".join(failures))
        return np.stack(rows)

    def _request(self, batch: list[str]) -> np.ndarray:
        for attempt in range(self.settings.max_retries + 1):
            try:
                reply = self._client.post("/embeddings", json={"model": self.settings.model, "input": batch})
            except httpx.HTTPError as exc:
                status, detail = 0, str(exc)
            else:
                status, detail = reply.status_code, reply.text[:300]
                if status == 200:
                    return self._parse(reply.json(), len(batch))
                if status in SPLIT_STATUS:
                    raise ItemFailed(f"the endpoint refused the input ({status}): {detail}")
                if status not in RETRY_STATUS:
                    raise DependencyFailed(f"embedding endpoint answered {status}: {detail}")
            if attempt < self.settings.max_retries:
                delay = min(30.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)
                log.warning("embedding endpoint: %s; retry %d in %.1f s", status or detail, attempt + 1, delay)
                time.sleep(delay)
        raise DependencyFailed(f"embedding endpoint kept failing after {self.settings.max_retries} retries")

    def _parse(self, payload: dict[str, object], expected: int) -> np.ndarray:
        data = payload.get("data")
        if not isinstance(data, list):
            raise DependencyFailed("embedding endpoint answered without a data list")
        rows: dict[int, list[float]] = {}
        for item in data:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("index"), int)
                or not isinstance(item.get("embedding"), list)
            ):
                raise DependencyFailed("embedding endpoint answered an item without index or embedding")
            rows[item["index"]] = item["embedding"]
        if sorted(rows) != list(range(expected)):
            raise DependencyFailed(f"embedding endpoint answered indexes {sorted(rows)[:10]} for {expected} inputs")
        matrix = np.asarray([rows[i] for i in range(expected)], dtype=np.float32)
        if matrix.shape[1] != self.settings.dimension:
            raise DependencyFailed(
                f"embedding endpoint answered {matrix.shape[1]}-d vectors, expected {self.settings.dimension}"
            )
        normalised: np.ndarray = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        return normalised

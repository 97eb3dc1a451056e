"""OnnxEmbedder: tokenize, run the ONNX graph, mean-pool over the mask, L2-normalise.

Batches are sorted by length, padded per batch (padding everything to 128 makes short
queries ~9x slower) and small (`MAX_BATCH_TOKENS`), or hold one text each for a model
multiplied in int8; inputs are truncated at the preset's max_tokens. Throughput scales better
with workers than with threads on this model; a lone worker gets the machine's cores (the
local launcher's `K0_THREADS`).
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Protocol

import numpy as np

from k0maru_common import DependencyFailed, InvalidInput, NotReady, release_free_heap

from ._presets import ModelPreset
from ._slim import slim_model_file

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)
MAX_BATCH_TOKENS = 256
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")


def normalise_text(text: str) -> str:
    """What is embedded, and what the cache key hashes: collapsed whitespace, trimmed."""
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", text)).strip()


def length_batches(order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
    """`order` (indexes by ascending length) cut into batches of at most `batch_size` texts and
    `MAX_BATCH_TOKENS` padded tokens.

    The budget is small: a full-length chunk runs alone and short texts batch a few at a time.
    Larger batches were slower on this machine's two cores (partly the missing memory arena: a
    large batch's intermediate tensors are fresh pages each time): with 2,048 tokens SciFact's
    chunks took 1.43x as long, LoCoMo's turns 1.25x, CoSQA's code 1.4x (bench/README.md, "int8
    MatMul"); a float model's vectors are the same whatever the batch. A model multiplied in
    int8 runs one text at a time (`batch_size` 1): its activations are quantized with one scale
    per run, so a batch would make a text's vector depend on the texts beside it (cosine 0.99 to
    itself alone).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending length: the last item sets the padded width
        if current and (len(current) >= batch_size or (len(current) + 1) * lengths[i] > MAX_BATCH_TOKENS):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class TextEmbedder(Protocol):
    """What the service needs from a backend (ONNX in-process, or an HTTP endpoint)."""

    preset: ModelPreset

    def embed(self, texts: list[str], is_query: bool = False) -> np.ndarray: ...

    def interrupt(self) -> None:
        """The service stops: end the embedding under way where the backend can, and refuse later
        ones, with DependencyFailed (the stream worker then leaves the batch's jobs pending)."""


class OnnxEmbedder:
    def __init__(self, preset: ModelPreset, threads: int = 1, batch_size: int = 32) -> None:
        self.preset = preset
        self.batch_size = batch_size
        for path in (preset.model_path, preset.tokenizer_path):
            if not path.is_file():
                raise NotReady(f"model file missing: {path}")
        self._tokenizer: Tokenizer | None = None
        import onnxruntime as ort  # imported here: the service binds and names its model before this
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        if preset.string_input:
            import onnxruntime_extensions

            options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
        else:
            try:
                self._tokenizer = Tokenizer.from_file(str(preset.tokenizer_path))
            except Exception as exc:
                raise NotReady(f"tokenizer {preset.tokenizer_path} cannot be loaded: {exc}") from exc
            self._tokenizer.no_padding()
            self._tokenizer.enable_truncation(preset.max_tokens)
        # `interrupt` sets its terminate flag: the run under way ends within milliseconds (a batch
        # of 32 long chunks takes seconds, and a stop waited for it) and any later run at once
        self._run_options = ort.RunOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No memory arena: it keeps the peak of the largest batch for the process's life (+150 MB per
        # session after 256-token batches: 404 vs 252 MB); without it embedding costs ~5 % more CPU.
        options.enable_cpu_mem_arena = False
        # Several threads: the pool spins between the operators of one run (waking a sleeping
        # thread for each of a query's ~80 parallel sections ate the second thread's gain: a
        # SciFact claim took 9.0–10.6 ms with 1 thread, 9.2–10.1 with 2 not spinning, 6.4–8.2
        # spinning, 7.5–8.0 spinning within runs only) and stops spinning when the run ends, so
        # an idle worker takes no CPU (plain spinning: 0.06 s of CPU in 2 idle seconds).
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if threads > 1 else "0")
        options.add_session_config_entry("session.force_spinning_stop", "1")
        started = time.perf_counter()
        try:
            with slim_model_file(preset.model_path, preset.int8_matmul) as model:  # int8 tables stay int8: −34 MB
                self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise NotReady(f"model {preset.model_path} cannot be loaded: {exc}") from exc
        self._input_names = {i.name for i in self._session.get_inputs()}
        release_free_heap()  # constant folding's temporaries: 167 → 103 MB for the default model
        log.info("loaded %s in %.2f s", preset.name, time.perf_counter() - started)
        check = self.embed(["k0maru"])
        if check.shape != (1, preset.dimension) or not np.isfinite(check).all():
            raise NotReady(f"model {preset.name} produced {check.shape}, expected (1, {preset.dimension})")

    def _embed_strings(self, texts: list[str]) -> np.ndarray:
        """Models that take raw strings (tokenizer inside the graph): batch, normalise."""
        name = self._session.get_inputs()[0].name
        out = np.zeros((len(texts), self.preset.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = np.array([t[: self.preset.max_chars] for t in texts[start : start + self.batch_size]], dtype=object)
            vectors = self._run({name: batch})
            out[start : start + len(batch)] = vectors / np.maximum(
                np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12
            )
        return out

    def interrupt(self) -> None:
        self._run_options.terminate = True

    def _run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """The model's first output for `feeds`."""
        try:
            out: np.ndarray = self._session.run(None, feeds, self._run_options)[0]
        except Exception as exc:  # onnxruntime's own Fail type
            if self._run_options.terminate:
                raise DependencyFailed("embedding interrupted: the embedder is stopping") from exc
            raise
        return out

    def embed(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        """One L2-normalised float32 row per text, in the order given."""
        if not texts:
            return np.zeros((0, self.preset.dimension), dtype=np.float32)
        prefix = self.preset.query_prefix if is_query else self.preset.passage_prefix
        prepared = []
        for text in texts:
            clean = normalise_text(text)
            if not clean:
                raise InvalidInput("cannot embed empty text")
            prepared.append(prefix + clean)
        if self._tokenizer is None:
            return self._embed_strings(prepared)
        encodings = self._tokenizer.encode_batch(prepared)
        order = sorted(range(len(prepared)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(prepared), self.preset.dimension), dtype=np.float32)
        per_run = 1 if self.preset.int8_matmul else self.batch_size
        for idx in length_batches(order, [len(e.ids) for e in encodings], per_run):
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._run(feeds)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.maximum(norms, 1e-12)
        return out

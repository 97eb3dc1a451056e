"""The default ONNX model agrees with the fp32 reference (tests/fixtures/embeddings/make_reference.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from k0maru_common import DependencyFailed, InvalidInput, NotReady
from k0maru_embedder._model import OnnxEmbedder
from k0maru_embedder._presets import ModelPreset, resolve_preset
from k0maru_embedder._slim import slim_model

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "embeddings" / "minilm_l6_fp32_reference.json").read_text()
)


@pytest.fixture(scope="module", params=["minilm-l6-int8", "minilm-l6-q8"])
def embedder(request: pytest.FixtureRequest) -> OnnxEmbedder:
    return OnnxEmbedder(resolve_preset(request.param))


def test_agrees_with_fp32_reference(embedder: OnnxEmbedder):
    ours = embedder.embed(REFERENCE["texts"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * reference).sum(axis=1)
    # float MatMul on int8 weights: 0.999; activations quantized to 8 bits as well: 0.990
    assert cosines.min() >= (0.985 if embedder.preset.int8_matmul else 0.995), cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_batch_order_and_padding_do_not_change_vectors(embedder: OnnxEmbedder):
    """A text's vector is its own: the same alone, in a batch, or beside longer texts (the cache
    and a rebuilt index rely on it; the int8 model gets it by running one text at a time)."""
    texts = REFERENCE["texts"]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_threads_do_not_change_vectors(embedder: OnnxEmbedder):
    """The launcher gives a lone embedder several threads: the vectors (and the cache's) stay
    those of one thread, to the bit on this machine."""
    texts = REFERENCE["texts"]
    threaded = OnnxEmbedder(embedder.preset, threads=2)
    assert np.allclose(threaded.embed(texts), embedder.embed(texts), atol=1e-6)
    assert np.allclose(threaded.embed(texts[:1], is_query=True), embedder.embed(texts[:1], is_query=True), atol=1e-6)


def test_empty_text_is_refused(embedder: OnnxEmbedder):
    with pytest.raises(InvalidInput):
        embedder.embed(["ok", "  \n "])


def test_interrupt_ends_the_embedding_under_way_and_refuses_later_ones():
    """A stop must not wait for a batch of long chunks (64 of 256 tokens: seconds on one thread):
    `interrupt` (from the stopping thread) ends the run under way, and any later one, with
    DependencyFailed, which the stream worker answers by leaving the jobs pending."""
    embedder = OnnxEmbedder(resolve_preset("minilm-l6-int8"))
    outcome: list[BaseException | np.ndarray] = []
    running = threading.Event()

    def embed_long() -> None:
        running.set()
        try:
            outcome.append(embedder.embed([f"word{i} " * 300 for i in range(64)]))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=embed_long)
    thread.start()
    running.wait()
    embedder.interrupt()
    thread.join()
    assert isinstance(outcome[0], DependencyFailed), outcome[0]
    with pytest.raises(DependencyFailed, match="stopping"):
        embedder.embed(["one more"])


def test_unknown_preset_and_incomplete_custom_are_refused(tmp_path: Path):
    with pytest.raises(InvalidInput):
        resolve_preset("no-such-model")
    with pytest.raises(InvalidInput):
        resolve_preset("custom", tmp_path / "m.onnx")
    with pytest.raises(NotReady):
        OnnxEmbedder(ModelPreset("x", tmp_path / "missing.onnx", tmp_path / "tok.json", 384))


def test_slim_model_keeps_embedding_tables_int8_with_identical_outputs():
    """The rewrite gathers int8 rows before dequantizing: the same outputs, bit for bit, from a
    graph whose float word-embedding table no longer exists (so the session cannot fold it)."""
    import onnxruntime as ort

    path = resolve_preset("minilm-l6-int8").model_path
    slim = slim_model(path)
    assert slim is not None
    ids = np.array([[101, 7592, 2088, 102, 0], [101, 2023, 2003, 1037, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": (ids > 0).astype(np.int64)}
    original, rewritten = ort.InferenceSession(str(path)), ort.InferenceSession(slim)
    if "token_type_ids" in {i.name for i in original.get_inputs()}:
        feeds["token_type_ids"] = np.zeros_like(ids)
    assert np.array_equal(original.run(None, feeds)[0], rewritten.run(None, feeds)[0])
    before, after = _gather_tables(path.read_bytes()), _gather_tables(slim)
    tables = {"inner.embeddings.word_embeddings.weight", "inner.embeddings.position_embeddings.weight"}
    assert tables <= before and not tables & after  # the folded float tables fed Gather; now nothing reads them
    assert {f"{name}_q" for name in tables} <= after  # the int8 ones are gathered instead


def test_int8_matmul_multiplies_the_stored_int8_weights():
    """With `int8_matmul` every MatMul on a per-column int8 weight becomes DynamicQuantizeMatMul
    on that int8 tensor (no float copy of it is left to fold), and the output stays close."""
    import onnxruntime as ort

    path = resolve_preset("minilm-l6-int8").model_path
    plain, int8 = slim_model(path), slim_model(path, int8_matmul=True)
    assert plain is not None and int8 is not None
    before, after = _ops(plain), _ops(int8)
    assert after["DynamicQuantizeMatMul"] == 36  # 6 layers × (Q, K, V, output, 2 feed-forward)
    assert before["MatMul"] - after["MatMul"] == 36 and "DynamicQuantizeMatMul" not in before
    assert before["Cast"] - after["Cast"] == 36  # the weights' dequantization is gone
    ids = np.array([[101, 7592, 2088, 2003, 1037, 3231, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    a, b = ort.InferenceSession(plain), ort.InferenceSession(int8)
    if "token_type_ids" in {i.name for i in a.get_inputs()}:
        feeds["token_type_ids"] = np.zeros_like(ids)
    x, y = a.run(None, feeds)[0].mean(axis=1)[0], b.run(None, feeds)[0].mean(axis=1)[0]
    assert 0.98 <= float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)) < 1.0  # close, and really changed


def _ops(model: bytes) -> dict[str, int]:
    from collections import Counter

    from k0maru_embedder._slim import _model_class

    parsed = _model_class()()
    parsed.ParseFromString(model)
    return Counter(node.op_type for node in parsed.graph.node)


def _gather_tables(model: bytes) -> set[str]:
    from k0maru_embedder._slim import _model_class

    parsed = _model_class()()
    parsed.ParseFromString(model)
    return {node.input[0] for node in parsed.graph.node if node.op_type == "Gather"}


def test_slim_model_leaves_other_graphs_and_refuses_garbage(tmp_path: Path):
    assert slim_model(resolve_preset("use-multilingual").model_path) is None  # no gathered int8 table
    garbage = tmp_path / "m.onnx"
    garbage.write_bytes(b"\xff" * 64)
    tokenizer = resolve_preset("minilm-l6-int8").tokenizer_path
    with pytest.raises(NotReady, match="cannot be loaded"):
        OnnxEmbedder(ModelPreset("x", garbage, tokenizer, 384))

"""The default ONNX model agrees with the fp32 reference (tests/fixtures/embeddings/make_reference.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from k0maru_common import InvalidInput, NotReady
from k0maru_embedder._model import OnnxEmbedder
from k0maru_embedder._presets import ModelPreset, resolve_preset

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "embeddings" / "minilm_l6_fp32_reference.json").read_text()
)


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(resolve_preset("minilm-l6-int8"))


def test_agrees_with_fp32_reference(embedder: OnnxEmbedder):
    ours = embedder.embed(REFERENCE["texts"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_batch_order_and_padding_do_not_change_vectors(embedder: OnnxEmbedder):
    texts = REFERENCE["texts"]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_empty_text_is_refused(embedder: OnnxEmbedder):
    with pytest.raises(InvalidInput):
        embedder.embed(["ok", "  \n "])


def test_unknown_preset_and_incomplete_custom_are_refused(tmp_path: Path):
    with pytest.raises(InvalidInput):
        resolve_preset("no-such-model")
    with pytest.raises(InvalidInput):
        resolve_preset("custom", tmp_path / "m.onnx")
    with pytest.raises(NotReady):
        OnnxEmbedder(ModelPreset("x", tmp_path / "missing.onnx", tmp_path / "tok.json", 384))

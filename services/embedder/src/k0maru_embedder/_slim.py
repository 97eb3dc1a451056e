"""Run a weight-only int8 model as int8: embedding tables gathered as int8, MatMuls in int8.

The default model stores every weight as int8 with a per-row or per-column scale and rebuilds
the float weights in the graph (`Cast(W_q) → Mul(·, W_scale)`). onnxruntime folds those
constants at load, so the session holds the float tables: the word-embedding table alone is
30,522 × 384 floats, 47 MB per process, of which a query reads a few rows. `slim_model` rewrites
each such table that only feeds `Gather` into `Gather(W_q) → Cast → Mul(Gather(W_scale))`:
the same float rows (the same arithmetic on the same numbers, so vectors are bit-identical),
from an int8 table four times smaller.

Weights that feed `MatMul` with one scale per column can, on request (`int8_matmul`, a preset's
choice since the vectors change), be multiplied as they are stored: `MatMul(x, Mul(Cast(W_q),
W_scale))` becomes onnxruntime's `DynamicQuantizeMatMul(x, W_q, W_scale)`, which quantizes the
activations to 8 bits per call and multiplies in integers. On this machine's AVX2 cores (no
VNNI) a query runs 1.5-1.7x faster and bulk work 1.3-1.5x, and the weights stay int8 in memory;
vectors differ from float multiplication by a cosine of 0.993 (bench/README.md, "int8 MatMul").
Without the option those weights stay folded: dequantizing them per call would cost time on
every batch.

The model is read and written with a schema of the few ONNX fields touched, built here from
descriptors; protobuf keeps every other field (tensor data included) as unknown fields and
writes them back unchanged, so no `onnx` package is needed. A graph without the pattern, or with
weights in external files, comes back as None (the caller loads the file as it is).
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FLOAT = 1  # onnx TensorProto.FLOAT
_INT8 = 3  # onnx TensorProto.INT8
_CONTRIB = "com.microsoft"  # onnxruntime's own operators (DynamicQuantizeMatMul)
_ATTR_INT = 2  # onnx AttributeProto.INT
_EXTERNAL = 1  # onnx TensorProto.DataLocation.EXTERNAL
MAX_SLIM_BYTES = 256 * 1024 * 1024


@cache
def _model_class() -> Any:
    """The subset of onnx.proto (same field numbers) that the rewrite reads or writes."""
    file = descriptor_pb2.FileDescriptorProto(name="k0maru_onnx_subset.proto", package="k0maru_onnx_subset")
    repeated, optional = (
        descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
        descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    kinds = descriptor_pb2.FieldDescriptorProto
    schema: dict[str, list[tuple[str, int, int, int, str]]] = {
        "Attribute": [("name", 1, optional, kinds.TYPE_STRING, ""), ("i", 3, optional, kinds.TYPE_INT64, ""),
                      ("type", 20, optional, kinds.TYPE_INT32, "")],
        "Node": [("input", 1, repeated, kinds.TYPE_STRING, ""), ("output", 2, repeated, kinds.TYPE_STRING, ""),
                 ("name", 3, optional, kinds.TYPE_STRING, ""), ("op_type", 4, optional, kinds.TYPE_STRING, ""),
                 ("attribute", 5, repeated, kinds.TYPE_MESSAGE, "Attribute"), ("domain", 7, optional, kinds.TYPE_STRING, "")],
        "Tensor": [("dims", 1, repeated, kinds.TYPE_INT64, ""), ("data_type", 2, optional, kinds.TYPE_INT32, ""),
                   ("name", 8, optional, kinds.TYPE_STRING, ""), ("data_location", 14, optional, kinds.TYPE_INT32, "")],
        "Graph": [("node", 1, repeated, kinds.TYPE_MESSAGE, "Node"), ("initializer", 5, repeated, kinds.TYPE_MESSAGE, "Tensor")],
        "OperatorSetId": [("domain", 1, optional, kinds.TYPE_STRING, ""), ("version", 2, optional, kinds.TYPE_INT64, "")],
        "Model": [("graph", 7, optional, kinds.TYPE_MESSAGE, "Graph"),
                  ("opset_import", 8, repeated, kinds.TYPE_MESSAGE, "OperatorSetId")],
    }  # fmt: skip
    for message, fields in schema.items():
        proto = file.message_type.add(name=message)
        for name, number, label, kind, type_name in fields:
            field = proto.field.add(name=name, number=number, label=label, type=kind)
            if type_name:
                field.type_name = f".k0maru_onnx_subset.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("k0maru_onnx_subset.Model"))


def _int_attr(node: Any, name: str, default: int) -> int:
    for attribute in node.attribute:
        if attribute.name == name:
            return int(attribute.i)
    return default


def _dequantized_weights(
    nodes: list[Any], dims: dict[str, list[int]], consumers: dict[str, list[int]], producer: dict[str, int]
) -> Iterator[tuple[int, int, str, str]]:
    """Each `Mul(Cast(W_q → float), W_scale)` of a 2-D initializer whose cast feeds only that
    Mul: (index of the Mul, index of the Cast, W_q's name, W_scale's name)."""
    for m, mul in enumerate(nodes):
        if mul.op_type != "Mul" or mul.domain or len(mul.input) != 2 or mul.input[0] not in producer:
            continue
        c = producer[mul.input[0]]
        cast = nodes[c]
        quantized = cast.input[0] if cast.input else ""
        if (
            cast.op_type == "Cast"
            and _int_attr(cast, "to", 0) == _FLOAT
            and len(consumers[cast.output[0]]) == 1
            and len(dims.get(quantized, [])) == 2
        ):
            yield m, c, quantized, mul.input[1]


def slim_model(path: Path, int8_matmul: bool = False) -> bytes | None:
    """The model at `path` with its gathered int8 tables kept int8 and, with `int8_matmul`, its
    int8 MatMul weights multiplied as int8 (`DynamicQuantizeMatMul`), or None if it has neither
    (or is larger than `MAX_SLIM_BYTES`: parsing holds it in memory twice, for a gain that
    matters only to small models)."""
    if path.stat().st_size > MAX_SLIM_BYTES:
        return None
    model = _model_class()()
    model.ParseFromString(path.read_bytes())
    graph = model.graph
    if any(tensor.data_location == _EXTERNAL for tensor in graph.initializer):
        return None  # its data files are found relative to the model's path: load it from there
    nodes = list(graph.node)
    if not nodes:
        return None
    tensors = {tensor.name: tensor for tensor in graph.initializer}
    dims = {name: list(tensor.dims) for name, tensor in tensors.items()}
    consumers: dict[str, list[int]] = defaultdict(list)  # tensor name → indexes of the nodes reading it
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            consumers[name].append(i)
        for name in node.output:
            producer[name] = i
    node_class = type(nodes[0])
    dropped: set[int] = set()
    stand_ins: dict[int, list[Any]] = {}  # index of a node → the nodes that take its place
    for m, c, quantized, scale in _dequantized_weights(nodes, dims, consumers, producer):
        readers = consumers[nodes[m].output[0]]
        if not readers:
            continue
        if dims.get(scale) == [dims[quantized][0], 1] and all(  # one scale per row: rows dequantize alone
            nodes[g].op_type == "Gather"
            and not nodes[g].domain
            and nodes[g].input[0] == nodes[m].output[0]
            and _int_attr(nodes[g], "axis", 0) == 0
            for g in readers
        ):
            dropped |= {c, m}
            for g in readers:
                rows, out = nodes[g].input[1], nodes[g].output[0]
                replacement = [
                    node_class(op_type=op, name=f"{output}/k0_{op.lower()}", input=inputs, output=[output])
                    for op, inputs, output in (
                        ("Gather", [quantized, rows], f"{out}/k0_q"),
                        ("Gather", [scale, rows], f"{out}/k0_s"),
                        ("Cast", [f"{out}/k0_q"], f"{out}/k0_f"),
                        ("Mul", [f"{out}/k0_f", f"{out}/k0_s"], out),
                    )
                ]
                replacement[2].attribute.add(name="to", i=_FLOAT, type=_ATTR_INT)
                stand_ins[g] = replacement
        elif (
            int8_matmul
            and tensors[quantized].data_type == _INT8
            and dims.get(scale) == [1, dims[quantized][1]]  # one scale per column: what the operator takes
            and consumers[scale] == [m]  # reshaped below: nothing else may read it
            and all(
                nodes[r].op_type == "MatMul"
                and not nodes[r].domain
                and list(nodes[r].input[1:]) == [nodes[m].output[0]]
                for r in readers
            )
        ):
            del tensors[scale].dims[0]  # [1, N] → [N]: the same floats (kept as unknown fields)
            dropped |= {c, m}
            for r in readers:
                stand_ins[r] = [
                    node_class(
                        op_type="DynamicQuantizeMatMul",
                        domain=_CONTRIB,
                        name=f"{nodes[r].name}/k0_int8",
                        input=[nodes[r].input[0], quantized, scale],
                        output=list(nodes[r].output),
                    )
                ]
    if not stand_ins:
        return None
    ordered = []
    for i, node in enumerate(nodes):  # topological order kept: stand-ins sit where the node they replace was
        if i in stand_ins:
            ordered.extend(stand_ins[i])
        elif i not in dropped:
            copy = node_class()
            copy.CopyFrom(node)
            ordered.append(copy)
    del graph.node[:]
    graph.node.extend(ordered)
    if any(n.domain == _CONTRIB for n in ordered) and not any(o.domain == _CONTRIB for o in model.opset_import):
        model.opset_import.add(domain=_CONTRIB, version=1)
    data: bytes = model.SerializeToString()
    return data


@contextmanager
def slim_model_file(path: Path, int8_matmul: bool = False) -> Iterator[Path]:
    """`slim_model(path, int8_matmul)` written to a temporary file for onnxruntime to load by path (removed on
    exit), or `path` itself when there is nothing to slim. A model handed over as bytes costs
    22 MB more after loading than the same model loaded from a file."""
    model = slim_model(path, int8_matmul)
    if model is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="k0maru-model-") as folder:
        slim = Path(folder) / path.name
        slim.write_bytes(model)
        del model
        yield slim

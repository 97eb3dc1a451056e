"""Keep a weight-only int8 model's embedding tables int8 in memory: gather rows, then dequantize.

The default model stores every weight as int8 with a per-row or per-column scale and rebuilds
the float weights in the graph (`Cast(W_q) → Mul(·, W_scale)`). onnxruntime folds those
constants at load, so the session holds the float tables: the word-embedding table alone is
30,522 × 384 floats, 47 MB per process, of which a query reads a few rows. `slim_model` rewrites
each such table that only feeds `Gather` into `Gather(W_q) → Cast → Mul(Gather(W_scale))`:
the same float rows (the same arithmetic on the same numbers, so vectors are bit-identical),
from an int8 table four times smaller. Weights that feed `MatMul` stay folded: dequantizing
them per call would cost time on every batch.

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
        "Model": [("graph", 7, optional, kinds.TYPE_MESSAGE, "Graph")],
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


def slim_model(path: Path) -> bytes | None:
    """The model at `path` with its gathered int8 tables kept int8, or None if it has none (or is
    larger than `MAX_SLIM_BYTES`: parsing holds it in memory twice, for a gain that matters
    only to small models)."""
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
    dims = {tensor.name: list(tensor.dims) for tensor in graph.initializer}
    consumers: dict[str, list[int]] = defaultdict(list)  # tensor name → indexes of the nodes reading it
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            consumers[name].append(i)
        for name in node.output:
            producer[name] = i
    node_class = type(nodes[0])
    dropped: set[int] = set()
    stand_ins: dict[int, list[Any]] = {}  # index of a Gather → the nodes that take its place
    for m, mul in enumerate(nodes):
        if mul.op_type != "Mul" or mul.domain or len(mul.input) != 2 or mul.input[0] not in producer:
            continue
        c = producer[mul.input[0]]
        cast = nodes[c]
        quantized, scale = (cast.input[0] if cast.input else ""), mul.input[1]
        if (
            cast.op_type != "Cast"
            or _int_attr(cast, "to", 0) != _FLOAT
            or len(consumers[cast.output[0]]) != 1
            or len(dims.get(quantized, [])) != 2
            or dims.get(scale) != [dims[quantized][0], 1]  # one scale per row: rows dequantize alone
        ):
            continue
        gathers = consumers[mul.output[0]]
        if not gathers or any(
            nodes[g].op_type != "Gather"
            or nodes[g].domain
            or nodes[g].input[0] != mul.output[0]
            or _int_attr(nodes[g], "axis", 0) != 0
            for g in gathers
        ):
            continue
        dropped |= {c, m}
        for g in gathers:
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
    if not stand_ins:
        return None
    ordered = []
    for i, node in enumerate(nodes):  # topological order kept: stand-ins sit where their Gather was
        if i in stand_ins:
            ordered.extend(stand_ins[i])
        elif i not in dropped:
            copy = node_class()
            copy.CopyFrom(node)
            ordered.append(copy)
    del graph.node[:]
    graph.node.extend(ordered)
    data: bytes = model.SerializeToString()
    return data


@contextmanager
def slim_model_file(path: Path) -> Iterator[Path]:
    """`slim_model(path)` written to a temporary file for onnxruntime to load by path (removed on
    exit), or `path` itself when there is nothing to slim. A model handed over as bytes costs
    22 MB more after loading than the same model loaded from a file."""
    model = slim_model(path)
    if model is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="k0maru-model-") as folder:
        slim = Path(folder) / path.name
        slim.write_bytes(model)
        del model
        yield slim

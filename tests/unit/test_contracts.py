"""The committed stubs equal what protos/ generates, and v1 keeps its wire numbers."""

from __future__ import annotations

import filecmp
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "libs" / "common" / "src" / "k0maru" / "v1"


def test_regenerating_stubs_changes_nothing(tmp_path: Path):
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_protos"] = module
    spec.loader.exec_module(module)
    generated = module.generate(tmp_path)
    names = sorted(p.name for p in generated)
    assert names == sorted(p.name for p in COMMITTED.iterdir() if p.suffix in {".py", ".pyi"})
    different = [n for n in names if not filecmp.cmp(tmp_path / "k0maru" / "v1" / n, COMMITTED / n, shallow=False)]
    assert different == [], f"stale stubs, run scripts/gen_protos.py: {different}"


def test_every_rpc_of_the_design_exists():
    from k0maru.v1 import embedder_pb2, offload_pb2, retriever_pb2, scanner_pb2

    def methods(module, service):  # type: ignore[no-untyped-def]
        return set(module.DESCRIPTOR.services_by_name[service].methods_by_name)

    assert methods(scanner_pb2, "Scanner") == {
        "Scan",
        "Changes",
        "GetDocuments",
        "ListDocuments",
        "ListDocumentPages",  # ListDocuments in pages (issue 15: one message per note was ~1 s at 5k notes)
        "Status",
    }
    assert methods(embedder_pb2, "Embedder") == {"Embed", "Info"}
    assert methods(retriever_pb2, "Retriever") == {
        "Search",
        "GetNote",
        "Backlinks",
        "IndexStatus",
        "Reindex",
        "Graph",
        "Superseded",  # the notes later ones replace, for the loadout (the rules stay in the retriever)
    }
    assert methods(offload_pb2, "Offload") == {
        "OffloadLog",
        "InspectLogNode",
        "FlushSession",
        "DistillSkill",
        "GetProjectLoadout",
        "Conventions",
        "TokenStats",
        "ListLogs",
        "RecordRecall",
    }


def test_wire_numbers_are_frozen():
    from k0maru.v1 import common_pb2, retriever_pb2

    fields = {f.name: f.number for f in common_pb2.ChangeEvent.DESCRIPTOR.fields}
    assert fields == {"seq": 1, "kind": 2, "path": 3, "hash": 4, "old_path": 5, "at_unix_ms": 6, "vault_id": 7}
    req = {f.name: f.number for f in retriever_pb2.SearchRequest.DESCRIPTOR.fields}
    assert req == {"query": 1, "limit": 2, "mode": 3, "scope": 4, "tagmemo": 5, "explain": 6, "dedup": 7}

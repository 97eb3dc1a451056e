"""BM25 top-10 lists (chunk ids and exact scores) and the link graph after a cold build through
the scanner's `parse_document` and `NoteIndex.apply`, written to a JSON file: run it with two
checkouts' venvs and compare the files (`--compare A B`) to show a change kept every result.

    nice -n 10 <venv>/bin/python bench/bm25_equal.py OUT.json [--linked VAULT] [--workdir DIR] [--commit-every N]
    .venv/bin/python bench/bm25_equal.py --compare A.json B.json

Sets: the first 4,000 documents of five BEIR sets written as a vault the way `k0maru eval beir`
writes one (300 SciFact queries, 200 of each other set), plus `--linked` (e.g. a
`bench/linked_vault.py` vault) searched with 300 SciFact queries. `--commit-every N` commits after
every N notes, as an index build committed along the way does (several segments, not one).
"""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from k0maru_cli._eval import load_jsonl, write_vault
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner
from k0maru_scanner.server import parse_document

BEIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir"  # /work/shared/data/beir here
SETS = [
    ("scifact", 300),
    ("cosqa_dev", 200),
    ("locomo_dev/beir_turns", 200),
    ("zh_cmrc2018", 200),
    ("tagged_android", 200),
]
DOCS = 4000
LATER = {"link_later": True} if "link_later" in inspect.signature(NoteIndex.apply).parameters else {}


def sample_vault(name: str, work: Path) -> Path:
    vault = work / "vaults" / name.replace("/", "_")
    if not vault.exists():
        source = work / "corpus" / name.replace("/", "_")
        source.mkdir(parents=True, exist_ok=True)
        with (source / "corpus.jsonl").open("w", encoding="utf-8") as out:
            for i, doc in enumerate(load_jsonl(BEIR / name / "corpus.jsonl")):
                if i >= DOCS:
                    break
                out.write(json.dumps(doc, ensure_ascii=False) + "\n")
        write_vault(source, vault)
    return vault


def build_and_search(vault: Path, queries: list[str], commit_every: int = 0) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp())
    try:
        scanner = IncrementalScanner(vault, Manifest(tmp / "m.sqlite", 1_000_000), IgnoreRules(), 2 << 20)
        scanner.scan()
        index = NoteIndex(
            Bm25Index(tmp / "bm25", BM25Analyzer()), EdgeVectorStore(tmp / "v", 8), IndexState(tmp / "s.sqlite"), 8
        )
        paths = sorted(p for p, r in scanner.manifest.files.items() if r.indexed)
        for i, path in enumerate(paths, start=1):
            doc = parse_document(scanner, path)
            if doc is not None:
                index.apply(doc, want_jobs=False, **LATER)
            if commit_every and i % commit_every == 0:
                index.commit()
        index.commit(1)
        top10 = [index.bm25.search(q, 10, Scope()) for q in queries]
        graph = [(p, sorted(index.graph.outgoing(p))) for p in paths]
        result = {"notes": len(paths), "chunks": index.bm25.count(), "top10": top10, "graph": graph}
        index.close()
        return result
    finally:
        shutil.rmtree(tmp)


def compare(a_file: str, b_file: str) -> None:
    a, b = json.loads(Path(a_file).read_text()), json.loads(Path(b_file).read_text())
    for name in a:
        same = sum(x == y for x, y in zip(a[name]["top10"], b[name]["top10"], strict=True))
        print(
            f"{name}: {same}/{len(a[name]['top10'])} top-10 lists identical (ids and scores); "
            f"chunks {a[name]['chunks']} / {b[name]['chunks']}; link graph identical: {a[name]['graph'] == b[name]['graph']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--linked", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "k0-bm25-equal")
    parser.add_argument("--compare", nargs=2)
    parser.add_argument("--commit-every", type=int, default=0)
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    scifact = [q["text"] for q in load_jsonl(BEIR / "scifact" / "queries.jsonl")]
    out: dict[str, Any] = {}
    if args.linked:
        out["linked"] = build_and_search(args.linked, scifact[-300:], args.commit_every)
    for name, n in SETS:
        queries = [q["text"] for q in load_jsonl(BEIR / name / "queries.jsonl")][-n:]
        out[name] = build_and_search(sample_vault(name, args.workdir), queries, args.commit_every)
        print(name, out[name]["notes"], "notes", out[name]["chunks"], "chunks", flush=True)
    Path(args.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()

"""Server-side pieces of the console: Mermaid rendered to SVG, and the offload catalog it lists."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from k0maru.v1 import common_pb2, retriever_pb2
from k0maru_gateway._console import note_links
from k0maru_gateway._mermaid import parse, render_svg
from k0maru_offload import _catalog as catalog
from k0maru_offload._engine import OffloadEngine

SVG = "{http://www.w3.org/2000/svg}"


def test_offload_diagram_becomes_svg_with_every_node_and_edge():
    source = (
        "flowchart TD\n"
        '  run["cargo test"] --> ex{"exit 101"}\n'
        '  ex --> log[("300 lines: node_0123456789abcdef")]\n'
        '  log --> err["E0502"]\n'
        '  err --> loc["src/a.rs:3:4"]\n'
        '  log --> n["2 err, 0 warn"]\n'
        "  classDef bad fill:#7f1d1d,color:#fff\n"
        "  class err bad\n"
    )
    svg = ET.fromstring(render_svg(source))
    assert svg.tag == SVG + "svg"
    texts = [t.text for t in svg.iter(SVG + "text")]
    assert texts == [
        "cargo test",
        "exit 101",
        "300 lines: node_0123456789abcdef",
        "E0502",
        "src/a.rs:3:4",
        "2 err, 0 warn",
    ]
    assert len(list(svg.iter(SVG + "line"))) == 5
    assert len(list(svg.iter(SVG + "polygon"))) == 1  # the exit diamond
    bad = next(g for g in svg.iter(SVG + "g") if g.get("data-id") == "err")
    assert bad.find(SVG + "rect").get("fill") == "#7f1d1d"  # classDef applied
    graph = parse(source)
    assert graph.direction == "TD" and len(graph.edges) == 5 and graph.nodes["log"].shape == "db"


def test_layers_follow_the_edges_and_labels_are_escaped():
    svg_text = render_svg(
        'graph LR\n a["<script>alert(1)</script>"] -->|"x<y"| b((B)) --> c\n  c --> a\n classDef z fill:url(x)'
    )
    svg = ET.fromstring(svg_text)
    assert "<script>" not in svg_text and "&lt;script&gt;" in svg_text
    assert next(t.text for t in svg.iter(SVG + "text")) == "x<y"  # edge label, as text
    assert "url(x)" not in svg_text  # only plain colours pass classDef


def test_what_is_not_a_flowchart_says_so():
    svg = ET.fromstring(render_svg("sequenceDiagram\n  A->>B: hi"))
    assert "no flowchart nodes" in "".join(t.text or "" for t in svg.iter(SVG + "text"))


def test_catalog_lists_offloaded_logs_newest_first(tmp_path: Path):
    engine = OffloadEngine(tmp_path, threshold=5, max_bytes=1_000_000)
    first = engine.offload("\n".join(f"line {i}" for i in range(20)) + "\nerror: boom\n", "build", command="make")
    assert catalog.record(tmp_path, first, "build", "make", 2)
    second = engine.offload("\n".join(f"other {i}" for i in range(30)), "", command="")
    catalog.record(tmp_path, second, "", "", None)
    later = os.stat(tmp_path / first.ref_path).st_mtime_ns + 10**9
    os.utime(tmp_path / second.ref_path, ns=(later, later))
    (tmp_path / second.ref_path).with_suffix(".json").unlink()  # listed from the log itself
    (tmp_path / ".k0maru" / "refs" / "notes.txt").write_text("ignored")
    reply = catalog.list_logs(tmp_path)
    assert reply.total == 2 and [e.node_id for e in reply.logs] == [second.node_id, first.node_id]
    old, new = reply.logs[1], reply.logs[0]
    assert (old.task_id, old.command, old.exit_code, old.line_count) == ("build", "make", 2, 21)
    assert old.first_error and "flowchart" in old.mermaid
    assert not new.HasField("exit_code") and new.line_count == 30 and new.original_tokens > 0
    again = engine.offload("\n".join(f"line {i}" for i in range(20)) + "\nerror: boom\n", "build", command="make")
    assert not catalog.record(tmp_path, again, "build", "make", 0)  # the same log: the first record stays
    other_task = engine.offload("\n".join(f"line {i}" for i in range(20)) + "\nerror: boom\n", "ci", command="make")
    assert not catalog.record(tmp_path, other_task, "ci", "make", 2)  # same content under another task: seen
    assert catalog.list_logs(tmp_path, limit=1).logs[0].node_id == second.node_id
    by_task = {e.task_id: e for e in catalog.list_logs(tmp_path).logs}
    assert by_task["build"].exit_code == 2 and not by_task["ci"].HasField("exit_code")  # listed from its file


def test_a_notes_links_are_listed_unresolved_when_the_retriever_sends_no_resolutions():
    """A retriever older than `GetNoteReply.links` (a rolling upgrade) answers without them:
    the note still opens, its links listed as written and leading nowhere."""
    doc = common_pb2.Document(
        path="wiki/a.md",
        links=[common_pb2.Link(target="storm drain", alias="the drain"), common_pb2.Link(target="b")],
    )
    resolved = [
        retriever_pb2.LinkResolution(target="storm drain", path="misc/storm drain.md"),
        retriever_pb2.LinkResolution(target="b"),
    ]
    assert [(x["target"], x["alias"], x["path"]) for x in note_links(doc, resolved)] == [
        ("storm drain", "the drain", "misc/storm drain.md"),
        ("b", "", None),
    ]
    assert [(x["target"], x["path"]) for x in note_links(doc, [])] == [("storm drain", None), ("b", None)]
    label_first = [retriever_pb2.LinkResolution(target="the drain", path="misc/storm drain.md"), resolved[1]]
    assert note_links(doc, label_first)[0]["alias"] == "storm drain"  # sides turned


def test_a_link_to_a_heading_or_a_block_says_which_in_the_note_view():
    """`[[Kestrel Migration#^rb42x1]]` was listed as a link to the note, its block dropped."""
    doc = common_pb2.Document(
        links=[
            common_pb2.Link(target="Kestrel Migration", block="rb42x1", line=3),
            common_pb2.Link(target="Kestrel Migration", heading="Rollback", line=4),
        ]
    )
    where = [retriever_pb2.LinkResolution(target="Kestrel Migration", path="Projects/Kestrel Migration.md")] * 2
    listed = note_links(doc, where)
    assert [(lk["heading"], lk["block"], lk["path"]) for lk in listed] == [
        ("", "rb42x1", "Projects/Kestrel Migration.md"),
        ("Rollback", "", "Projects/Kestrel Migration.md"),
    ]

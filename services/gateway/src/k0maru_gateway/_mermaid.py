"""Mermaid flowcharts rendered to SVG on the server, so the console needs no renderer and no network.

Covers the flowchart subset the offload service writes and simple hand-written ones:
`flowchart|graph TD|TB|LR|RL|BT`, nodes `id`, `id[text]`, `id(text)`, `id([text])`, `id[(text)]`,
`id((text))`, `id{text}` (quoted or not), chains `a --> b --> c`, `---`, `-.->`, `==>`, edge labels
`-->|text|`, `classDef name fill:#..,color:#..,stroke:#..` and `class a,b name`. Layout: layers by
longest path from the sources, nodes in a layer side by side. Every text is escaped; anything
else in the source is ignored rather than trusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

_HEADER = re.compile(r"^(?:flowchart|graph)\s+(TD|TB|LR|RL|BT)\s*$", re.I)
_NODE = re.compile(
    r"""(?P<id>[A-Za-z0-9_\-]+)\s*(?:
        \[\((?P<db>.*?)\)\]|\(\[(?P<stadium>.*?)\]\)|\(\((?P<circle>.*?)\)\)|
        \[(?P<box>.*?)\]|\((?P<round>.*?)\)|\{(?P<diamond>.*?)\})?""",
    re.X,
)
_ARROW = re.compile(r"\s*(?:-->|---|-\.->|==>)\s*(?:\|(?P<label>[^|]*)\|\s*)?")
_COLOR = re.compile(r"^#[0-9A-Fa-f]{3,8}$|^[a-z]{3,20}$")
CHAR_W = 7.4
NODE_H = 34
GAP_X = 28
GAP_Y = 46
PAD = 12


@dataclass
class _Node:
    id: str
    text: str
    shape: str = "box"
    cls: str = ""
    layer: int = 0
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0


@dataclass
class _Graph:
    direction: str = "TD"
    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    styles: dict[str, dict[str, str]] = field(default_factory=dict)


def _label(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1]
    return raw


def _node(graph: _Graph, m: re.Match[str]) -> str:
    node_id = m["id"]
    shape = next((k for k in ("db", "stadium", "circle", "box", "round", "diamond") if m[k] is not None), "")
    node = graph.nodes.get(node_id)
    if node is None:
        node = graph.nodes[node_id] = _Node(node_id, node_id)
    if shape:
        node.shape = shape
        node.text = _label(m[shape]) or node_id
    return node_id


def parse(source: str) -> _Graph:
    graph = _Graph()
    started = False
    for raw in source.splitlines():
        line = raw.split("%%", 1)[0].strip().rstrip(";")
        if not line:
            continue
        header = _HEADER.match(line)
        if header:
            graph.direction = header[1].upper()
            started = True
            continue
        if not started:  # not a flowchart (or not yet): nothing to draw
            continue
        if line.startswith("classDef "):
            parts = line.split(None, 2)
            if len(parts) == 3:
                style = {}
                for item in parts[2].split(","):
                    key, _, value = item.partition(":")
                    if key.strip() in ("fill", "color", "stroke") and _COLOR.match(value.strip()):
                        style[key.strip()] = value.strip()
                graph.styles[parts[1]] = style
            continue
        if line.startswith("class "):
            parts = line.split()
            if len(parts) == 3:
                for node_id in parts[1].split(","):
                    if node_id in graph.nodes:
                        graph.nodes[node_id].cls = parts[2]
            continue
        if line.startswith(("subgraph", "end", "style ", "linkStyle", "click ")):
            continue
        pos = 0
        m = _NODE.match(line, pos)
        if not m or not m["id"]:
            continue
        current = _node(graph, m)
        pos = m.end()
        while pos < len(line):
            arrow = _ARROW.match(line, pos)
            if not arrow:
                break
            m = _NODE.match(line, arrow.end())
            if not m or not m["id"]:
                break
            target = _node(graph, m)
            graph.edges.append((current, target, _label(arrow["label"] or "")))
            current, pos = target, m.end()
    return graph


def _layout(graph: _Graph) -> tuple[float, float]:
    incoming: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for a, b, _ in graph.edges:
        incoming[b].append(a)
    for _ in range(len(graph.nodes)):  # longest path from the sources (cycles stop at len(nodes))
        changed = False
        for node_id, sources in incoming.items():
            layer = max((graph.nodes[s].layer + 1 for s in sources if s != node_id), default=0)
            layer = min(layer, len(graph.nodes))
            if layer > graph.nodes[node_id].layer:
                graph.nodes[node_id].layer = layer
                changed = True
        if not changed:
            break
    layers: dict[int, list[_Node]] = {}
    for node in graph.nodes.values():
        node.w = max(60.0, len(node.text) * CHAR_W + 2 * PAD + (24 if node.shape == "diamond" else 0))
        layers.setdefault(node.layer, []).append(node)
    horizontal = graph.direction in ("LR", "RL")
    spans = []
    for row in layers.values():
        spans.append(sum(n.w for n in row) + GAP_X * (len(row) - 1) if not horizontal else len(row) * (NODE_H + GAP_X))
    widest = max(spans, default=0.0)
    column_w = max((n.w for n in graph.nodes.values()), default=0.0)
    for index in sorted(layers):
        row = layers[index]
        if horizontal:
            y = (widest - len(row) * (NODE_H + GAP_X)) / 2 + NODE_H / 2 + GAP_X / 2
            for node in row:
                node.x, node.y = index * (column_w + GAP_Y) + column_w / 2, y
                y += NODE_H + GAP_X
        else:
            x = (widest - (sum(n.w for n in row) + GAP_X * (len(row) - 1))) / 2
            for node in row:
                node.x, node.y = x + node.w / 2, index * (NODE_H + GAP_Y) + NODE_H / 2
                x += node.w + GAP_X
    depth = max(layers, default=0) + 1
    if horizontal:
        width, height = depth * (column_w + GAP_Y) - GAP_Y, widest
    else:
        width, height = widest, depth * (NODE_H + GAP_Y) - GAP_Y
    if graph.direction in ("BT", "RL"):
        for node in graph.nodes.values():
            if graph.direction == "BT":
                node.y = height - node.y
            else:
                node.x = width - node.x
    return width, height


def _shape(node: _Node, fill: str, stroke: str) -> str:
    x, y, w, h = node.x - node.w / 2, node.y - NODE_H / 2, node.w, NODE_H
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"'
    if node.shape == "diamond":
        points = f"{node.x},{y - 6} {x + w},{node.y} {node.x},{y + h + 6} {x},{node.y}"
        return f'<polygon points="{points}" {paint}/>'
    if node.shape in ("round", "stadium", "circle"):
        return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h}" rx="{h / 2}" {paint}/>'
    if node.shape == "db":
        return (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h}" rx="6" {paint}/>'
            f'<ellipse cx="{node.x:.1f}" cy="{y + 4:.1f}" rx="{w / 2:.1f}" ry="4" {paint}/>'
        )
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h}" rx="4" {paint}/>'


def _border_point(node: _Node, toward_x: float, toward_y: float) -> tuple[float, float]:
    dx, dy = toward_x - node.x, toward_y - node.y
    if dx == 0 and dy == 0:
        return node.x, node.y
    sx = (node.w / 2) / abs(dx) if dx else float("inf")
    sy = (NODE_H / 2 + 2) / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return node.x + dx * s, node.y + dy * s


def render_svg(source: str, max_nodes: int = 200) -> str:
    """The diagram as an `<svg>` element (a note saying why when the source is not a flowchart)."""
    graph = parse(source)
    if not graph.nodes or len(graph.nodes) > max_nodes:
        why = "no flowchart nodes found" if not graph.nodes else f"more than {max_nodes} nodes"
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" class="mermaid-svg" width="320" height="40" role="img">'
            f'<text x="8" y="24" fill="#94A3B8" font-size="12">{escape(why)}</text></svg>'
        )
    width, height = _layout(graph)
    margin = 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mermaid-svg" role="img" '
        f'width="{width + 2 * margin:.0f}" height="{height + 2 * margin + 12:.0f}" '
        f'viewBox="{-margin} {-margin - 6} {width + 2 * margin:.0f} {height + 2 * margin + 12:.0f}" '
        'font-family="JetBrains Mono, Noto Sans SC, monospace" font-size="12">',
        '<defs><marker id="k0-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748B"/></marker></defs>',
    ]
    for a, b, label in graph.edges:
        na, nb = graph.nodes[a], graph.nodes[b]
        x1, y1 = _border_point(na, nb.x, nb.y)
        x2, y2 = _border_point(nb, na.x, na.y)
        parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#64748B" '
            'stroke-width="1.5" marker-end="url(#k0-arrow)"/>'
        )
        if label:
            parts.append(
                f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{(y1 + y2) / 2:.1f}" fill="#94A3B8">{escape(label)}</text>'
            )
    for node in graph.nodes.values():
        style = graph.styles.get(node.cls, {})
        fill, stroke, color = (
            style.get("fill", "#1E293B"),
            style.get("stroke", "#22C55E"),
            style.get("color", "#E2E8F0"),
        )
        parts.append(f'<g class="node" data-id="{escape(node.id)}">{_shape(node, fill, stroke)}')
        parts.append(
            f'<text x="{node.x:.1f}" y="{node.y + 4:.1f}" text-anchor="middle" fill="{color}">'
            f"{escape(node.text)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)

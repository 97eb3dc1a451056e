"""The house rules of the package layout, checked on the source tree (issue 9).

- The gateway depends on libs/common, MCP and the web stack only.
- No package imports another package's private (`_*`) module; services never import each other.
- Each constant and concept shared across packages is defined once.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "k0maru_common": ROOT / "libs/common/src/k0maru_common",
    "k0maru_scanner": ROOT / "services/scanner/src/k0maru_scanner",
    "k0maru_embedder": ROOT / "services/embedder/src/k0maru_embedder",
    "k0maru_retriever": ROOT / "services/retriever/src/k0maru_retriever",
    "k0maru_offload": ROOT / "services/offload/src/k0maru_offload",
    "k0maru_gateway": ROOT / "services/gateway/src/k0maru_gateway",
    "k0maru_cli": ROOT / "cli/src/k0maru_cli",
}
SERVICES = {"k0maru_scanner", "k0maru_embedder", "k0maru_retriever", "k0maru_offload", "k0maru_gateway"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_gateway_depends_on_common_mcp_and_the_web_stack_only():
    project = tomllib.loads((ROOT / "services/gateway/pyproject.toml").read_text())["project"]
    names = {re.split(r"[=<>~!\[ ]", dep, maxsplit=1)[0] for dep in project["dependencies"]}
    assert names == {"k0maru-common", "mcp", "starlette", "uvicorn"}


def test_no_private_imports_across_packages_and_no_service_imports_another():
    offenders: list[str] = []
    for owner, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            for name in _imports(path):
                top, _, rest = name.partition(".")
                if not top.startswith("k0maru_") or top == owner:
                    continue
                where = f"{path.relative_to(ROOT)} imports {name}"
                if rest.startswith("_") or "._" in f".{rest}":
                    offenders.append(where + " (private module)")
                elif owner in SERVICES and top in SERVICES:
                    offenders.append(where + " (a service importing another service)")
    assert offenders == []


def _source_texts() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for folder in PACKAGES.values() for p in folder.rglob("*.py")]


def test_shared_constants_are_defined_once():
    texts = _source_texts()
    patterns = {
        "health service names": r'"k0maru\.v1\.(Scanner|Embedder|Retriever|Offload|Gateway)"',
        "round-robin service config": r"round_robin",
        "embedder target list": r'"ipv4:"',
        "token estimate": r"def estimate_tokens\b",
        "offload threshold": r"OFFLOAD_THRESHOLD_LINES\s*=",
        "log size limit": r"64 \* 1024 \* 1024",
    }
    for concept, pattern in patterns.items():
        where = [str(p.relative_to(ROOT)) for p, text in texts if re.search(pattern, text)]
        assert len(where) == 1, f"{concept} defined in {where}"


def test_lazy_public_apis_resolve_every_exported_name():
    import importlib

    for package in ("k0maru_common", "k0maru_cli", "k0maru_gateway"):
        module = importlib.import_module(package)
        assert set(module._WHERE) == set(module.__all__), package
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{package}.{name}"

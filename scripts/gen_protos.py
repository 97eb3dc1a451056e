"""Generate the Python gRPC stubs for protos/k0maru/v1 into libs/common/src.

Run: .venv/bin/python scripts/gen_protos.py            (writes the committed stubs)
     .venv/bin/python scripts/gen_protos.py --out DIR  (writes elsewhere, used by the drift test)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
DEFAULT_OUT = ROOT / "libs" / "common" / "src"
HEADER = "# Generated from protos/k0maru/v1 by scripts/gen_protos.py; do not edit. Regenerate with:\n#   .venv/bin/python scripts/gen_protos.py\n"


def generate(out: Path) -> list[Path]:
    """Run protoc for every proto and return the generated files."""
    pkg = out / "k0maru" / "v1"
    pkg.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "k0maru" / "v1").glob("*.proto"))
    grpc_include = Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{grpc_include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for init in (out / "k0maru" / "__init__.py", pkg / "__init__.py"):
        init.write_text(HEADER)
    generated = sorted(p for p in pkg.iterdir() if p.suffix in {".py", ".pyi"})
    for path in generated:
        if path.name != "__init__.py":
            path.write_text(HEADER + path.read_text())
    return generated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    generate(parser.parse_args().out)


if __name__ == "__main__":
    main()

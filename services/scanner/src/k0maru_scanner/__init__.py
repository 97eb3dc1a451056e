"""k0maru scanner: reads the vault, owns the manifest and the change journal.

Public library API (everything in `_*` modules is private): `ScannerSettings` and
`scan_once(settings)`, one scan against the manifest with no service running — how
`k0maru scan` works when no stack is up. The service itself is `python -m k0maru_scanner`.
"""

from .config import ScannerSettings
from .server import build_server, scan_once

__all__ = ["ScannerSettings", "build_server", "scan_once"]

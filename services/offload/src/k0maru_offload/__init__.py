"""k0maru offload: long logs out of the agent context, session knowledge into the vault.

Public library API (what other packages may import; everything in `_*` modules is private):
`OffloadEngine` offloads a log and slices offloaded logs without a running service, which is
how `k0maru offload` / `k0maru inspect` work when no stack is up.
"""

from ._engine import Offloaded, OffloadEngine

__all__ = ["OffloadEngine", "Offloaded"]

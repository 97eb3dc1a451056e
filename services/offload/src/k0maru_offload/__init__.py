"""k0maru offload: long logs out of the agent context, session knowledge into the vault.

Public library API (what other packages may import; everything in `_*` modules is private):
`OffloadEngine` offloads a log and slices offloaded logs without a running service, which is
how `k0maru offload` / `k0maru inspect` work when no stack is up; `next_step(node_id)` says what
to call to read more of an offloaded log.
"""

from ._engine import Offloaded, OffloadEngine, next_step

__all__ = ["OffloadEngine", "Offloaded", "next_step"]

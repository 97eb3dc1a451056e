"""`python -m k0maru_common.healthcheck ADDRESS SERVICE`: exit 0 only if the service is SERVING.

Used by Docker health checks; it asks the stock gRPC health service, so it proves the
service finished starting (model loaded, index open), not merely that a port is open.
"""

from __future__ import annotations

import sys

from ._server import PROBE_TIMEOUT_S, health_state


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m k0maru_common.healthcheck ADDRESS SERVICE", file=sys.stderr)
        return 2
    state = health_state(argv[0], argv[1], timeout_s=PROBE_TIMEOUT_S)
    print(state)
    return 0 if state == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

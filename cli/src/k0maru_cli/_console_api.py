"""The running stack's console JSON API through the standard library alone.

`k0maru search` and `k0maru scan` are a whole process per call: importing grpcio (with the
asyncio it pulls in) and protobuf costs more than the call itself, while the console is already
up, warm, and answers JSON. It is called like any other client, under the console's rules: its
token when it has one (as recorded in `stack.json`), else the stack's gRPC token (which a scan
then requires), and its Host check (a console bound to a wildcard address is reached on
127.0.0.1, which its `K0_HTTP_ALLOWED_HOSTS` must then name).
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from ._state import StackState

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a whole-process CLI path); mypy knows the name
if TYPE_CHECKING:
    from typing import Any

WILDCARDS = frozenset({"", "0.0.0.0", "::"})


class ConsoleError(Exception):
    """The console refused the call (its `{"error": ...}` message) or could not be reached."""


def console_address(url: str) -> tuple[str, int]:
    """`http://127.0.0.1:7878/` → ("127.0.0.1", 7878); `http://[::1]:7878/` and the launcher's
    `http://::1:7878/` → ("::1", 7878); a wildcard bind → loopback."""
    netloc = url.removeprefix("http://").split("/", 1)[0]
    host, _, port = netloc.rpartition(":")
    host = host.strip("[]")
    if host in WILDCARDS:
        host = "127.0.0.1" if host != "::" else "::1"
    return host, int(port)


def call_console(
    state: StackState,
    method: str,
    path: str,
    params: dict[str, str | int | list[str]] | None = None,
    body: dict[str, Any] | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """One JSON API call; the answer's JSON object, or ConsoleError with the console's message."""
    import http.client

    host, port = console_address(state.console_url)
    target = f"{path}?{urlencode(params, doseq=True)}" if params else path  # a list: the name repeated
    headers = {"accept": "application/json"}
    token = state.console_token or state.grpc_token
    if token:
        headers["authorization"] = f"Bearer {token}"
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["content-type"] = "application/json"
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request(method, target, payload, headers)
        response = connection.getresponse()
        raw = response.read()
    except OSError as exc:
        raise ConsoleError(f"the console at {state.console_url} does not answer ({exc})") from exc
    finally:
        connection.close()
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise ConsoleError(f"the console at {state.console_url} answered {response.status} without a JSON object")
    if response.status != 200:
        raise ConsoleError(str(answer.get("error") or f"the console answered {response.status}"))
    return answer

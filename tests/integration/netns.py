"""Hosts for multi-host tests: Linux network namespaces joined by one bridge (no Docker).

Each host is a namespace with one address on a private bridge that has no address in the root
namespace, so nothing outside the hosts this test made can be reached from them or reach them.
Host names resolve through `/etc/netns/<namespace>/hosts`, which `ip netns exec` mounts over
`/etc/hosts` inside the namespace: processes keep the host names of docker-compose.yml
(`scanner:50051`, `redis://redis:6379/0`, `dns:///embedder:50052`). Several hosts may share a
name (two `embedder` hosts: the name resolves to both, as Compose's DNS does for a scaled service).
Everything made here is removed by `close()`, also after a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from k0maru_common import orphan_guard


def can_make_namespaces() -> str:
    """'' when this process can make network namespaces, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    probe = f"k0probe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False)
    return ""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Host:
    name: str  # the host name processes use (several hosts may share one)
    namespace: str
    address: str
    veth: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)


class Network:
    """A bridge and the hosts on it; `subnet` is the first three octets (e.g. "10.77.3")."""

    def __init__(self, subnet: str, logs: Path) -> None:
        self._tag = f"{os.getpid() % 100000}"
        self.bridge = f"k0br{self._tag}"
        self.subnet = subnet
        self.logs = logs
        self.hosts: list[Host] = []
        logs.mkdir(parents=True, exist_ok=True)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("link", "set", self.bridge, "up")

    def add(self, name: str) -> Host:
        n = len(self.hosts) + 1
        namespace = f"k0-{self._tag}-{n}"
        veth = f"k0v{self._tag}h{n}"
        address = f"{self.subnet}.{n + 1}"
        _ip("netns", "add", namespace)
        _ip("link", "add", veth, "type", "veth", "peer", "name", f"{veth}p")
        _ip("link", "set", f"{veth}p", "netns", namespace)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("netns", "exec", namespace, "ip", "link", "set", "lo", "up")
        _ip("netns", "exec", namespace, "ip", "addr", "add", f"{address}/24", "dev", f"{veth}p")
        _ip("netns", "exec", namespace, "ip", "link", "set", f"{veth}p", "up")
        host = Host(name, namespace, address, veth)
        self.hosts.append(host)
        self.write_hosts_files()
        return host

    def write_hosts_files(self) -> None:
        """Every host resolves every host name (a shared name to all its addresses)."""
        lines = ["127.0.0.1 localhost", "::1 localhost"] + [f"{h.address} {h.name}" for h in self.hosts]
        for h in self.hosts:
            folder = Path("/etc/netns") / h.namespace
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text("\n".join(lines) + "\n")

    def start(self, host: Host, argv: list[str], env: dict[str, str], log_name: str) -> subprocess.Popen[bytes]:
        """Run argv on `host` with exactly `env` (plus PATH and HOME); it dies with this process."""
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"), **env}
        with open(self.logs / f"{log_name}.log", "ab") as log:
            proc = subprocess.Popen(
                orphan_guard([shutil.which("ip") or "/usr/sbin/ip", "netns", "exec", host.namespace, *argv]),
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        host.procs.append(proc)
        return proc

    def run(self, host: Host, argv: list[str], env: dict[str, str] | None = None, timeout: float = 30.0) -> str:
        """Run a short command on `host` and return its stdout (raises on failure)."""
        out = subprocess.run(
            ["ip", "netns", "exec", host.namespace, *argv],
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": os.environ.get("HOME", "/root"),
                **(env or {}),
            },
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} on {host.name} failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        return out.stdout

    def link(self, host: Host, up: bool) -> None:
        """Cut (or restore) a host's network link, as a pulled cable would."""
        _ip("link", "set", host.veth, "up" if up else "down")

    def stop(self, host: Host, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
        for proc in host.procs:
            if proc.poll() is None:
                proc.send_signal(sig)
        for proc in host.procs:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        host.procs.clear()

    def close(self) -> None:
        for host in reversed(self.hosts):
            with contextlib.suppress(Exception):
                self.stop(host, timeout=5.0)
        deadline = time.monotonic() + 5
        for host in self.hosts:
            subprocess.run(["ip", "netns", "del", host.namespace], check=False, capture_output=True)
            subprocess.run(["ip", "link", "del", host.veth], check=False, capture_output=True)
            shutil.rmtree(Path("/etc/netns") / host.namespace, ignore_errors=True)
        while (
            time.monotonic() < deadline
            and subprocess.run(["ip", "link", "show", self.bridge], capture_output=True).returncode == 0
        ):
            subprocess.run(["ip", "link", "del", self.bridge], check=False, capture_output=True)
        self.hosts.clear()

"""A vault on a full disk (a real 1 MB tmpfs, filled): what k0maru writes into the vault for the
user fails with a clear error, leaves no partial or temp file, and loses nothing the user or the
agent had: `k0maru offload` prints the output it could not keep. Mounting needs root; elsewhere
the test is skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from k0maru.v1 import offload_pb2
from k0maru_cli import Launcher
from k0maru_common import K0Error
from tests.conftest import write_notes

pytestmark = pytest.mark.integration
LOG = "".join(f"line {i}: compiling crate_{i}\n" for i in range(400)) + "error[E0502]: cannot borrow `v`\n"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left"):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    return filler


def leftovers(vault: Path) -> list[str]:
    return sorted(p.name for p in vault.rglob("*") if p.name.startswith((".tmp-", ".k0-flush-")))


def test_a_full_disk_fails_writes_clearly_and_loses_no_output(disk: Path, tmp_path: Path):
    vault = write_notes(disk / "vault", {"a.md": "# Alpha\n\nthe alpha note\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)  # the data dir has room
    state = launcher.start()
    client = state.client()
    try:
        filler = fill(disk)
        with pytest.raises(K0Error, match=r"cannot write the log \.k0maru/refs/.*: the disk is full"):
            client.call(client.offload.OffloadLog, offload_pb2.OffloadLogRequest(text=LOG, task_id="t1"))
        note = offload_pb2.FlushRequest(title="Decided: retry budget", content="We retry 3 times.", category="decision")
        with pytest.raises(K0Error, match=r"cannot write the (note|folder) .*: the disk is full"):
            client.call(client.offload.FlushSession, note)
        assert leftovers(vault) == []

        # the agent's command: its whole output still reaches it, and its own exit code
        command = [sys.executable, "-c", "import sys; [print(f'out {i}') for i in range(300)]; sys.exit(3)"]
        done = subprocess.run(
            [sys.executable, "-m", "k0maru_cli", "offload", "--vault", str(vault), "--data-dir", str(tmp_path / "data"),
             "--", *command],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 3, done.stderr
        printed = [line for line in done.stdout.splitlines() if line.startswith("out ")]
        assert printed == [f"out {i}" for i in range(300)]
        assert "not offloaded" in done.stderr and "the disk is full" in done.stderr
        assert leftovers(vault) == []

        filler.unlink()  # room again: the same calls work, nothing was left stuck
        reply = client.call(client.offload.OffloadLog, offload_pb2.OffloadLogRequest(text=LOG, task_id="t1"))
        assert reply.offloaded and (vault / ".k0maru" / "refs" / f"t1_{reply.node_id}.log").read_text() == LOG
        written = client.call(client.offload.FlushSession, note)
        assert (vault / written.path).read_text().count("We retry 3 times.") == 1
    finally:
        client.close()
        launcher.stop()

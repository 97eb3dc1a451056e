"""A vault (or a folder of it) on a drive or network share that is unmounted: the empty mount
point left behind is not every note on it deleted. Before, the next scan deleted them all from
the index, and the drive's return re-indexed (and re-embedded) every note. Real tmpfs mounts;
mounting needs root, elsewhere the tests are skipped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from k0maru_scanner._scanner import VaultUnavailable
from k0maru_scanner._watcher import ChangeWatcher
from tests.conftest import write_notes
from tests.unit.test_scanner import make

NOTES = {"a.md": "# A\n\nthe alpha note\n", "deep/b.md": "# B\n\nthe beta note\n"}


class Drive:
    """A tmpfs mounted at `at` and unmounted (lazily) at the end."""

    def __init__(self, at: Path) -> None:
        self.at = at

    def mount(self, notes: dict[str, str] | None = None) -> None:
        self.at.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(self.at)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        write_notes(self.at, notes if notes is not None else NOTES)  # the same bytes, new mtimes

    def unmount(self) -> None:
        subprocess.run(["umount", str(self.at)], check=True)


@pytest.fixture
def drives() -> Iterator[Callable[[Path], Drive]]:
    made: list[Drive] = []

    def drive(at: Path) -> Drive:
        made.append(Drive(at))
        return made[-1]

    yield drive
    for d in made:
        while subprocess.run(["mountpoint", "-q", str(d.at)]).returncode == 0:
            subprocess.run(["umount", "-l", str(d.at)], check=False)


def test_a_vault_whose_drive_is_unmounted_keeps_its_index(tmp_path: Path, drives: Callable[[Path], Drive]):
    vault, data = tmp_path / "vault", tmp_path / "data"
    data.mkdir()
    drive = drives(vault)
    drive.mount()
    scanner = make(vault, data)
    assert scanner.scan().added == 2
    drive.unmount()
    assert vault.is_dir() and not any(vault.iterdir())  # the empty mount point
    with pytest.raises(VaultUnavailable, match=r"was a mount point and holds no notes now"):
        scanner.scan()
    assert "kept as it was" in scanner.problem
    assert sorted(scanner.manifest.files) == ["a.md", "deep/b.md"]
    restarted = make(vault, data)  # what was a mount point is remembered across a restart
    with pytest.raises(VaultUnavailable):
        restarted.scan()
    drive.mount()
    result = restarted.scan()
    assert (result.unchanged, result.added, result.deleted, result.entries) == (2, 0, 0, ())
    assert restarted.problem == ""


def test_a_folder_whose_drive_is_unmounted_keeps_its_notes(tmp_path: Path, drives: Callable[[Path], Drive]):
    """A folder of the vault that is a mount point (a USB stick, a team share): its notes are out
    of sight while it is unmounted, as those of a folder that cannot be listed are; the rest of the
    vault is scanned as always."""
    vault, data = tmp_path / "vault", tmp_path / "data"
    write_notes(vault, {"home.md": "# Home\n", "gone.md": "# Gone soon\n"})
    data.mkdir()
    drive = drives(vault / "share")
    drive.mount()
    scanner = make(vault, data)
    assert scanner.scan().added == 4
    drive.unmount()
    (vault / "gone.md").unlink()  # a deletion elsewhere still counts
    (vault / "new.md").write_text("# New\n")
    result = scanner.scan()
    assert (result.deleted, result.added) == (1, 1)
    assert {"share/a.md", "share/deep/b.md"} <= set(scanner.manifest.files)
    assert scanner.out_of_sight == {
        "share/": "was a mount point and holds no notes now (an unmounted drive or network share?)"
    }
    assert make(vault, data).scan().deleted == 0  # and after a restart
    drive.mount()
    result = scanner.scan()
    assert (result.added, result.deleted, result.entries) == (0, 0, ()) and scanner.out_of_sight == {}
    # unmounted for good, and its folder removed: its notes are gone
    drive.unmount()
    (vault / "share").rmdir()
    result = scanner.scan()
    assert result.deleted == 2 and not any(p.startswith("share/") for p in scanner.manifest.files)


def test_notes_written_into_an_empty_mount_point_are_the_folders_notes(tmp_path: Path, drives: Callable[[Path], Drive]):
    """A mount point that holds notes of its own is a folder like any other: its drive's notes
    that it does not hold are deleted (moving a vault off a drive onto the disk)."""
    vault, data = tmp_path / "vault", tmp_path / "data"
    write_notes(vault, {"home.md": "# Home\n"})
    data.mkdir()
    drive = drives(vault / "share")
    drive.mount()
    scanner = make(vault, data)
    scanner.scan()
    drive.unmount()
    write_notes(vault / "share", {"a.md": NOTES["a.md"]})  # copied onto the disk
    result = scanner.scan()
    assert result.deleted == 1 and sorted(scanner.manifest.files) == ["home.md", "share/a.md"]


def test_the_watcher_rides_out_an_unmounted_vault(tmp_path: Path, drives: Callable[[Path], Drive]):
    """While the drive is away the watcher keeps scanning (no failure, no give-up), then watches
    the remounted drive with the OS again. Before, the remounted folder's dropped watch was taken
    for the OS's limit on watches, and the vault was polled every 2 s from then on (a drive of
    one folder: the watcher then sees the same folders listed before and after)."""
    vault, data = tmp_path / "vault", tmp_path / "data"
    data.mkdir()
    drive = drives(vault)
    flat = {"a.md": NOTES["a.md"], "b.md": NOTES["deep/b.md"]}
    drive.mount(flat)
    scanner = make(vault, data)
    scanner.scan()
    failures: list[str] = []
    watcher = ChangeWatcher(scanner, 0.05, 50, 1.0, on_give_up=failures.append, poll_s=0.2)

    def until(what: str, check: Callable[[], bool], timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            assert time.monotonic() < deadline, f"{what}; note: {watcher.note!r}; problem: {scanner.problem!r}"
            time.sleep(0.05)

    watcher.start()
    try:
        until("the OS watch in place", lambda: watcher.os_watch_tries >= 1 and watcher.note == "")
        drive.unmount()
        until("the unmounted drive said", lambda: "was a mount point" in scanner.problem)
        assert sorted(scanner.manifest.files) == ["a.md", "b.md"]
        drive.mount(flat)
        until("the drive back", lambda: scanner.problem == "")
        time.sleep(2.5)  # two periodic rescans: the watches are checked
        (vault / "later.md").write_text("# Later\n")
        until("a note saved on the drive found", lambda: "later.md" in scanner.manifest.files)
        assert watcher.note == "", watcher.note
        # the mount point itself gone: polled for, not a failure
        drive.unmount()
        vault.rmdir()
        until("the missing vault said", lambda: "not there" in watcher.note)
        assert sorted(scanner.manifest.files) == ["a.md", "b.md", "later.md"]
        drive.mount(flat)
        until("the drive back again", lambda: scanner.problem == "" and watcher.note == "")
        assert watcher.running and not failures and watcher.health().restarts == 0, watcher.health()
    finally:
        watcher.stop()


def test_no_note_or_log_is_written_into_an_unmounted_vault(tmp_path: Path, drives: Callable[[Path], Drive]):
    """The agent's note would be written into the empty mount point: hidden by the drive when it
    comes back, and making every note on the drive look deleted. The vault folder is never made
    again either (a drive unmounted with its mount point). A clear error, nothing written; an
    empty vault that is no mount point is a new one, and written into."""
    import datetime as dt

    from k0maru_common import CannotWrite
    from k0maru_offload._engine import OffloadEngine
    from k0maru_offload._files import VaultFolder
    from k0maru_offload._flush import FlushEngine, FlushNote

    vault = tmp_path / "vault"
    drive = drives(vault)
    drive.mount()
    folder = VaultFolder(vault)
    flush, offload = FlushEngine(vault, folder), OffloadEngine(vault, 10, folder=folder)
    note = FlushNote("Lock renewal plan", "Renew the lease at half its time.", "decision", (), (), "test")
    log = "".join(f"step {i}\n" for i in range(50)) + "error: it broke\n"
    day = dt.date(2026, 12, 4)
    drive.unmount()
    with pytest.raises(
        CannotWrite,
        match=r"cannot write the note 'Lock renewal plan': the vault folder was a mount point and is not mounted now",
    ):
        flush.flush(note, day)
    with pytest.raises(
        CannotWrite, match=r"cannot write the log .*: the vault folder was a mount point and is not mounted now"
    ):
        offload.offload(log)
    assert not any(vault.iterdir())
    vault.rmdir()
    with pytest.raises(CannotWrite, match=r"the vault folder is not there \(an unmounted drive\?\)"):
        flush.flush(note, day)
    assert not vault.exists()
    drive.mount()
    path, outcome = flush.flush(note, day)
    assert outcome == "created" and (vault / path).is_file()
    assert offload.offload(log).offloaded
    fresh = tmp_path / "new-vault"  # empty, and no mount point: a new vault
    fresh.mkdir()
    path, outcome = FlushEngine(fresh).flush(note, day)
    assert outcome == "created" and (fresh / path).is_file()


def test_no_note_is_written_into_an_unmounted_folder_of_the_vault(tmp_path: Path, drives: Callable[[Path], Drive]):
    """A team share mounted on a folder of the vault: a note for that folder (its category) would
    have been written into the empty mount point, and the scanner would have taken the folder for
    one that holds notes of its own, deleting the share's notes from the index (found by driving
    `k0maru mcp`). The rest of the vault is written into as always."""
    import datetime as dt

    from k0maru_common import CannotWrite
    from k0maru_offload._flush import FlushEngine, FlushNote

    vault = tmp_path / "vault"
    write_notes(vault, {"home.md": "# Home\n", "decisions/old.md": "# Old\n"})
    drive = drives(vault / "share")
    drive.mount()
    flush = FlushEngine(vault)
    day = dt.date(2026, 12, 4)
    drive.unmount()
    with pytest.raises(CannotWrite, match=r"the folder share was a mount point and is not mounted now"):
        flush.flush(FlushNote("Rota change", "Three pilots from Monday.", "share"), day)
    assert not any((vault / "share").iterdir())
    path, outcome = flush.flush(FlushNote("Lock plan", "Renew at half time.", "decision"), day)
    assert outcome == "created" and path.startswith("decisions/")
    drive.mount()
    path, outcome = flush.flush(FlushNote("Rota change", "Three pilots from Monday.", "share"), day)
    assert outcome == "created" and path.startswith("share/")


# Run with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped: root then meets a folder's
# permissions as its owner does (a plain user could not run this repository's Python).
REFUSED_FOLDER = """
import json, os, sys, time
from pathlib import Path
from k0maru_scanner._watcher import RETRY_S, ChangeWatcher
from tests.unit.test_scanner import make

vault, data = Path(sys.argv[1]), Path(sys.argv[2])
scanner = make(vault, data)
scans = []
scan = scanner.scan
scanner.scan = lambda *a, **k: scans.append(time.monotonic()) or scan(*a, **k)
scanner.scan()
said = {"out_of_sight": scanner.out_of_sight, "awaiting": scanner.awaiting_return()}
watcher = ChangeWatcher(scanner, 0.05, 50, 120.0, on_give_up=print, poll_s=0.2)
watcher.start()
deadline = time.monotonic() + 30
while not (watcher.os_watch_tries >= 1 and watcher.note == "") and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1.0)
settled = len(scans)
time.sleep(RETRY_S * 2 + 1)
said["scans_while_refused"] = len(scans) - settled
os.chmod(vault / "secret", 0o755)  # its owner may
deadline = time.monotonic() + 20
while scanner.out_of_sight and time.monotonic() < deadline:
    time.sleep(0.05)
said["after"] = scanner.out_of_sight
said["files"] = sorted(scanner.manifest.files)
watcher.stop()
print(json.dumps(said))
"""


def test_a_folder_refused_for_its_permissions_is_not_rescanned_every_few_seconds(tmp_path: Path):
    """The watcher scans every RETRY_S while notes are out of sight for a reason no OS event tells
    (an unmounted drive). A folder that cannot be listed for its permissions was waited for the
    same way, a whole scan every 5 s for as long as it stayed so; its chmod is an event, which
    brings its notes back at once."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux)")
    vault, data = tmp_path / "vault", tmp_path / "data"
    data.mkdir()
    write_notes(vault, {"a.md": "# A\n", "secret/s.md": "# S\n\nkept\n"})
    make(vault, data).scan()
    (vault / "secret").chmod(0)
    done = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-dac_override,-dac_read_search",
            sys.executable,
            "-c",
            REFUSED_FOLDER,
            str(vault),
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    (vault / "secret").chmod(0o755)
    if done.returncode != 0 and "setpriv" in done.stderr:
        pytest.skip(f"cannot drop capabilities here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["out_of_sight"] == {"secret/": "cannot be listed (Permission denied)"} and not said["awaiting"]
    assert said["scans_while_refused"] == 0
    # back within the script's 20 s: by the chmod's event, the periodic rescan being 120 s away
    assert said["after"] == {} and said["files"] == ["a.md", "secret/s.md"], said

"""A vault root holding a symlink loop and a FIFO named like a note: every offload call still
answers (before: INTERNAL "Too many levels of symbolic links", and a read of the FIFO waited
forever). Run in a child process so a hang fails the test instead of the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SCRIPT = """
import sys
from pathlib import Path
from k0maru_offload._conventions import sniff
from k0maru_offload._distill import distill
from k0maru_offload._flush import FlushEngine, FlushNote
from k0maru_offload._loadout import build_loadout
vault = Path(sys.argv[1])
sniff(vault)
path, outcome = FlushEngine(vault).flush(FlushNote(title="Decided: quarantine", content="We quarantine.", category="decision"))
assert outcome == "created" and (vault / path).is_file(), (path, outcome)
assert "quarantine" in build_loadout(vault).markdown.lower() or build_loadout(vault).markdown
print("ok")
"""


def test_offload_calls_survive_a_symlink_loop_and_a_fifo(tmp_path: Path):
    vault = tmp_path / "vault"
    (vault / "decisions").mkdir(parents=True)
    (vault / "decisions" / "2026-08-01-first.md").write_text("# First\n\nA decision.\n")
    (vault / "loop").symlink_to("loop")
    (vault / "self-a").symlink_to("self-b")
    (vault / "self-b").symlink_to("self-a")
    os.mkfifo(vault / "inbox.md")
    os.mkfifo(vault / "decisions" / "pipe.md")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(vault)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]

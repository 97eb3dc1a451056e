"""GitIgnores: the folders of a vault in git that its `.gitignore` files ignore and that hold no notes.

A vault that is a code repository (an agent's project, where `k0maru up` runs by default) holds
virtual environments, build outputs and vendored packages: `venv/…/site-packages/*.dist-info/
LICENSE.txt`, `*.egg-info/SOURCES.txt`, Sphinx's `_build/html/_sources/*.txt`, composer's
`vendor/`. Its `.gitignore` files name them. A folder is not walked when git ignores it (`git
check-ignore`, asked once per folder: every `.gitignore` of the repository, `.git/info/exclude`,
the user's excludes file) and most of the files it holds are not notes (the first
`SAMPLE_FILES` met breadth first). A folder of notes kept out of the repository (a private
journal) is walked, and so is a note ignored by name (`CLAUDE.local.md`): they are the user's.

The answers are remembered: git's until an ignore file changes, the sample's until the folder's
own listing does (its mtime). Not in a repository, no git, or git failing: nothing is left out
(a failure is said once in the log).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from k0maru_common import GIT_SAFE, git_env

log = logging.getLogger(__name__)

_TIMEOUT_S = 30.0  # one batch of folders; past it nothing is asked again (said)
SAMPLE_FILES = 200  # files looked at to tell a folder of notes from one of something else
MAX_SUBMODULES_MET = 50  # per batch of folders; past it the batch is taken as not ignored
_SUBMODULE = re.compile(r"Pathspec '([^']+)' is in submodule '([^']+)'")
Stamp = tuple[tuple[str, int, int, int], ...]


class GitIgnores:
    def __init__(self, vault: Path, is_note: Callable[[str], bool], enabled: bool = True) -> None:
        self.vault = vault
        self._is_note = is_note  # a file name the scanner indexes
        self.enabled = enabled
        self._samples: dict[str, tuple[tuple[int, int], bool]] = {}  # folder → (its stat, mostly notes)
        self._located = False
        self._sources: list[Path] = []  # the ignore files outside the vault's folders
        self._answers: dict[str, bool] = {}  # vault-relative folder → ignored by git
        self._stamp: Stamp | None = None  # of every ignore file, when the answers were given
        self._seen: list[tuple[str, int, int, int]] = []  # the vault's .gitignore files this walk
        self._reused = False  # this walk answered from what an earlier walk was told
        self._failed: set[str] = set()
        self._stderr = ""  # the last failed command's
        self._submodules: tuple[str, ...] = ()  # vault-relative folders ("x/") of submodules met
        self._hazard = ""  # why git must not be asked during this walk
        self.left_out: list[str] = []  # the folders the last walk left out
        self._leaving_out: list[str] = []  # those this walk has left out so far

    def begin_walk(self) -> None:
        if not self._located:
            self._located = True
            self._sources = self._locate() if self.enabled else []
        self._seen = []
        self._reused = False
        self._leaving_out = []
        self._hazard = ""

    def saw_ignore_file(self, rel: str, st: os.stat_result) -> None:
        """A `.gitignore` the walk listed (its stat: a change to it changes the answers). One
        that is a FIFO, a socket or a device would hold git for ever: git is not asked then."""
        self._seen.append((rel, st.st_ino, st.st_size, st.st_mtime_ns))
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):  # git does not follow a link
            self._hazard = f"{rel} is not a regular file: git would wait on it; what .gitignore ignores is indexed"

    def end_walk(self) -> bool:
        """True when an ignore file changed while answers given before were used: the walk must
        be done again (the answers are forgotten)."""
        stamp = tuple(sorted(self._seen)) + tuple(_stat(p) for p in self._sources)
        changed = self._stamp is not None and stamp != self._stamp
        self._stamp = stamp
        if changed:
            self._answers = {}
        self.left_out = self._leaving_out
        return changed and self._reused

    def describe(self) -> list[str]:
        """For the status: the folders the last walk left out, as `excluded` lines."""
        if not self.left_out:
            return []
        shown = ", ".join(f"{rel}/" for rel in sorted(self.left_out)[:5])
        more = f" and {len(self.left_out) - 5} more" if len(self.left_out) > 5 else ""
        return [
            f"{shown}{more}: ignored by .gitignore and holding no notes, not indexed (K0_GITIGNORE=false indexes them)"
        ]

    def skipped(self, folders: list[tuple[str, str]]) -> set[str]:
        """Which of `folders` ((path, vault-relative) pairs) are left out: ignored by git, and
        not mostly notes."""
        if not self._sources or not folders:
            return set()
        if self._hazard:
            self._say(self._hazard)
            return set()
        rels = [rel for _, rel in folders]
        unknown = [rel for rel in rels if rel not in self._answers]
        if len(unknown) < len(rels):
            self._reused = True
        if unknown:
            self._answers.update(self._ask(unknown))
        out = {rel for path, rel in folders if self._answers.get(rel) and not self._holds_notes(path)}
        self._leaving_out.extend(out)
        return out

    def _holds_notes(self, path: str) -> bool:
        """Whether most of the first SAMPLE_FILES files under `path` (breadth first, hidden names
        left out) are notes; an empty folder counts as one of notes (notes may come)."""
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return True
        key = (st.st_ino, st.st_mtime_ns)
        if (kept := self._samples.get(path)) is not None and kept[0] == key:
            return kept[1]
        notes = others = 0
        level = [path]
        while level and notes + others < SAMPLE_FILES:
            below: list[str] = []
            for folder in level:
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            below.append(entry.path)
                            continue
                    except OSError:
                        continue
                    if self._is_note(entry.name):
                        notes += 1
                    else:
                        others += 1
                if notes + others >= SAMPLE_FILES:
                    break
            level = below
        answer = notes >= others
        self._samples[path] = (key, answer)
        return answer

    def _locate(self) -> list[Path]:
        """The ignore files outside the vault's own folders, or [] when the vault is in no work
        tree (then git is never asked)."""
        out = self._run(["rev-parse", "--absolute-git-dir", "--show-toplevel"], quiet=True)
        if out is None:
            return []
        lines = out.decode("utf-8", "surrogateescape").split("\n")
        if len(lines) < 2 or not lines[1]:  # a bare repository, or inside .git
            return []
        git_dir, top = Path(lines[0]), Path(lines[1])
        sources = [git_dir / "info" / "exclude"]
        above = self.vault.parent
        while above != top and top in above.parents:
            sources.append(above / ".gitignore")
            above = above.parent
        if above == top and self.vault != top:
            sources.append(top / ".gitignore")
        excludes = self._run(["config", "--path", "core.excludesFile"], quiet=True)
        if excludes and excludes.strip():
            sources.append(Path(excludes.strip().decode("utf-8", "surrogateescape")))
        else:
            config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
            sources.append(Path(config) / "git" / "ignore")
        hazards = [p for p in sources if (kind := _kind(p)) and not stat.S_ISREG(kind)]
        if hazards:
            self._say(f"{hazards[0]} is not a regular file: git would wait on it; what .gitignore ignores is indexed")
            return []
        return sources

    def _ask(self, paths: list[str]) -> dict[str, bool]:
        # -v -n: one record per path (source, line, pattern, path as given); a `!pattern`
        # re-includes. Each path behind ./ : a folder named `:x` is no pathspec magic (check-ignore
        # takes no --literal-pathspecs)
        asked = [p for p in paths if not p.startswith(self._submodules)]
        for _ in range(MAX_SUBMODULES_MET):
            data = b"".join(b"./" + os.fsencode(p) + b"\0" for p in asked)
            out = self._run(["check-ignore", "-z", "--stdin", "-v", "-n"], data, ok_codes=(0, 1), quiet=True)
            inside = _SUBMODULE.search(self._stderr) if out is None else None
            if inside is None:
                break
            # git answers nothing for a batch that holds a path inside a submodule (another
            # repository, with its own .gitignore): its folders are walked as they are. git names
            # the submodule from the repository's top: the part of that name the path starts with
            given, submodule = inside.group(1).removeprefix("./"), inside.group(2)
            while submodule and not given.startswith(submodule + "/"):
                submodule = submodule.partition("/")[2]
            self._submodules += ((submodule or given.rpartition("/")[0] or given) + "/",)
            asked = [p for p in asked if not p.startswith(self._submodules)]
        if out is None:
            if self._stderr:
                self._say(f"git check-ignore: {self._stderr}; what .gitignore ignores is indexed")
            return dict.fromkeys(paths, False)
        fields = out.split(b"\0")
        answers: dict[str, bool] = {}
        for i in range(0, len(fields) - 3, 4):
            pattern, path = fields[i + 2], os.fsdecode(fields[i + 3].removeprefix(b"./"))
            answers[path] = bool(pattern) and not pattern.startswith(b"!")
        return {p: answers.get(p, False) for p in paths}

    def _run(
        self, args: list[str], data: bytes = b"", quiet: bool = False, ok_codes: tuple[int, ...] = (0,)
    ) -> bytes | None:
        try:  # check-ignore takes no --literal-pathspecs: `_ask` writes each path behind ./
            done = subprocess.run(
                [*GIT_SAFE, *args], cwd=self.vault, input=data, capture_output=True, env=git_env(), timeout=_TIMEOUT_S
            )
        except FileNotFoundError:  # no git: no repository to ask
            return None
        except subprocess.TimeoutExpired:  # every batch would wait as long: not asked again
            self._sources = []
            self._say(f"git {args[0]} ran past {_TIMEOUT_S:g} s; what .gitignore ignores is indexed")
            return None
        except OSError as exc:
            self._say(f"git {args[0]}: {exc}; what .gitignore ignores is indexed")
            return None
        self._stderr = ""
        if done.returncode not in ok_codes:
            self._stderr = done.stderr.decode("utf-8", "replace").strip()[:300]
            if not quiet and "not a git repository" not in self._stderr:
                self._say(f"git {args[0]}: {self._stderr}; what .gitignore ignores is indexed")
            return None
        return done.stdout

    def _say(self, what: str) -> None:
        if what not in self._failed:
            self._failed.add(what)
            log.warning("%s", what)


def _kind(path: Path) -> int:
    """The file type bits of what `path` names, 0 when there is nothing there."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def _stat(path: Path) -> tuple[str, int, int, int]:
    try:
        st = path.stat()
    except OSError:
        return (str(path), 0, 0, 0)
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)

"""Generated hostile vaults: any file names and contents; the scanner never fails and loses nothing.

Every note file ends up either indexed (and parseable through GetDocuments, into a message that
serializes) or recorded as skipped with a reason; the scan never writes into the vault.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from k0maru.v1 import scanner_pb2
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner, safe_name
from k0maru_scanner.server import ScannerServicer

NAME_BYTES = st.binary(min_size=1, max_size=30).filter(lambda b: b"/" not in b and b"\x00" not in b)
NAMES = st.one_of(
    NAME_BYTES,
    st.text(min_size=1, max_size=30).map(lambda t: t.encode("utf-8", "surrogateescape")),
    st.sampled_from([b"a\\b", b"..", b"C:\\x", b" ", b"#^[]|", b"\xff\xfe", "中文 笔记".encode()]),
).filter(lambda b: b"/" not in b and b"\x00" not in b and not b.startswith(b"."))
CONTENTS = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    # what Windows tools write: UTF-16 or UTF-32 behind a byte order mark, lone surrogates and all
    st.tuples(st.text(max_size=150), st.sampled_from(["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])).map(
        lambda te: ("\ufeff" + te[0]).encode(te[1], "surrogatepass")
    ),
    st.binary(max_size=100).map(lambda b: b"\xff\xfe" + b),
    st.sampled_from(
        [
            b"---\nkey: [unclosed\n---\n# T\n",
            # YAML's grammar takes these and its constructors (or JSON) refuse them
            b"---\ndate: 2026-02-30\n---\n# T\n",
            b"---\nt: !!timestamp soon\nn: !!int ten\n---\n",
            b"---\na: &x [*x]\nb: {1: one, c: two}\n---\n",
            # a "billion laughs": 9^7 values once its aliases are written out
            b"---\na: &a [l, l, l, l, l, l, l, l, l]\n"
            + b"".join(
                b"%c: &%c [%s]\n" % (k, k, b", ".join([b"*%c" % p] * 9))
                for p, k in zip(b"abcdef", b"bcdefg", strict=True)
            )
            + b"tags: *g\n---\n",
            b"---\n---\n",
            b"# " + b"#" * 200 + b"\n[[" * 100,
            "\ufeff# bom\n".encode(),
            b"```\nunterminated fence\n" * 20,
            b"\r\n\r\n# crlf\r\n",
        ]
    ),
)
FILES = st.dictionaries(NAMES.map(lambda b: b + b".md"), CONTENTS, min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=FILES, in_folder=st.booleans())
def test_any_vault_scans_and_every_file_is_accounted_for(files: dict[bytes, bytes], in_folder: bool):
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        folder = os.fsencode(vault / ("sub \\ dir" if in_folder else ""))
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        before = sorted(os.listdir(folder))
        scanner = IncrementalScanner(vault, Manifest(Path(tmp) / "m.sqlite", 1000), IgnoreRules(), 2 * 1024 * 1024)
        try:
            result = scanner.scan()
            prefix = "sub \\ dir/" if in_folder else ""
            expected = {safe_name(prefix + os.fsdecode(name)) for name in files}
            assert set(scanner.manifest.files) == expected
            assert result.added + result.skipped == len(expected)
            for record in scanner.manifest.files.values():
                assert record.indexed or record.skipped_reason
            indexed = sorted(p for p, r in scanner.manifest.files.items() if r.indexed)
            reply = ScannerServicer(scanner, "v", None).GetDocuments(
                scanner_pb2.GetDocumentsRequest(paths=indexed), None
            )
            assert sorted(d.path for d in reply.documents) == indexed and not reply.missing
            reply.SerializeToString()
            assert scanner.scan().entries == ()  # stable
            assert sorted(os.listdir(folder)) == before  # nothing written into the vault
        finally:
            scanner.manifest.close()


GLOBS = st.lists(
    st.one_of(
        st.text(alphabet="*?/[]{},!^\\ab.-_ ", max_size=20),
        st.text(max_size=20),
        st.sampled_from(["**/", "{a,{b,c}}", "[", "[!]", "[z-a]", "]", "{", "}", "**", "\\", "/abs/**"]),
    ),
    max_size=6,
)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
SETTINGS = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda ex, inc, hidden, other, comment: (
            ("// " + comment + "\n" if comment else "")
            + json.dumps({"foam.files.exclude": ex, "foam.files.include": inc, "files.exclude": hidden, "x": other})
        ).encode(),
        GLOBS,
        GLOBS,
        st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=4),
        JSON_VALUES,
        st.text(max_size=20).filter(lambda t: "\n" not in t),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    app=st.one_of(st.binary(max_size=200), GLOBS.map(lambda g: json.dumps({"userIgnoreFilters": g}).encode())),
    vscode=SETTINGS,
    edn=st.one_of(st.binary(max_size=200), GLOBS.map(lambda g: (":hidden [" + " ".join(map(repr, g)) + "]").encode())),
    daily=st.one_of(
        st.binary(max_size=100),
        st.builds(
            lambda fmt, folder: json.dumps({"format": fmt, "folder": folder}).encode(),
            st.one_of(st.text(alphabet="YMDdoW[]-./ ,ab", max_size=16), JSON_VALUES),
            st.one_of(st.text(max_size=8), JSON_VALUES),
        ),
    ),
    paths=st.lists(st.text(min_size=1, max_size=30), max_size=8),
)
def test_any_tool_settings_are_read_or_said_unreadable_and_never_fail_a_scan(
    app: bytes, vscode: bytes, edn: bytes, daily: bytes, paths: list[str]
):
    """What `.obsidian/app.json`, `.vscode/settings.json` and `logseq/config.edn` hold is the user's
    (or a sync conflict's, or a half-written file's): reading it and applying its rules never raise."""
    from k0maru_scanner._tool_settings import read_tool_settings

    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp)
        for rel, data in (
            (".obsidian/app.json", app),
            (".vscode/settings.json", vscode),
            ("logseq/config.edn", edn),
            (".obsidian/daily-notes.json", daily),
        ):
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_bytes(data)
        settings = read_tool_settings(vault)
        excludes = settings.excludes
        for path in paths:
            assert isinstance(settings.journals.daily_day(path), str) and isinstance(
                settings.journals.names(path), list
            )
            assert excludes.excludes(path) in (True, False)
            assert excludes.excludes_folder(path.rstrip("/") or "x") in (True, False)
        assert all(isinstance(d, str) for d in excludes.described)


IGNORE_LINES = st.lists(
    st.one_of(
        st.sampled_from(["a/", "b", "a", "c", "*.md", "!keep.md", "**/c/", "/a", "a/**", "x*", "!b/", "[ab]/", "\\#x"]),
        st.text(alphabet="ab*!/?[]x.", min_size=1, max_size=6),
    ),
    max_size=5,
)
TREE = st.dictionaries(
    st.lists(st.sampled_from(["a", "b", "c", "x y"]), min_size=0, max_size=3).map("/".join),
    st.lists(
        st.sampled_from(["n.md", "keep.md", "t.txt", "x.md", "lib.py", "data.bin", "a.so", "b.o", "c.pyc"]),
        min_size=1,
        max_size=6,
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=TREE, root_ignore=IGNORE_LINES, nested_ignore=IGNORE_LINES, tracked_share=st.integers(0, 3))
def test_a_note_git_does_not_ignore_is_never_left_out(tree, root_ignore, nested_ignore, tracked_share):
    """Any .gitignore files, any tree of notes and other files, some tracked: every note git does
    not ignore (tracked, or untracked and not ignored: `git ls-files --cached --others
    --exclude-standard`) is indexed, and what is left out git ignores."""
    from tests.conftest import git

    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "repo"
        vault.mkdir()
        git(vault, "init", "-q")
        (vault / ".gitignore").write_text("\n".join(root_ignore) + "\n", encoding="utf-8")
        for folder, names in tree.items():
            (vault / folder).mkdir(parents=True, exist_ok=True)
            for name in names:
                (vault / folder / name).write_text(f"# {folder} {name}\n", encoding="utf-8")
        first = next(iter(tree))
        (vault / first / ".gitignore").write_text("\n".join(nested_ignore) + "\n", encoding="utf-8")
        every = sorted(
            p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file() and ".git/" not in p.as_posix()
        )
        tracked = [p for i, p in enumerate(every) if tracked_share and i % (tracked_share + 1) == 0]
        if tracked:
            git(vault, "add", "-f", "--", *tracked)
        listed = git(vault, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
        rules = IgnoreRules()
        notes = {p for p in every if rules.wants_file(p.rsplit("/", 1)[-1])}
        must = {p for p in listed if p in notes}
        scanner = IncrementalScanner(vault, Manifest(Path(tmp) / "m.sqlite", 1000), rules, 1 << 20)
        try:
            scanner.scan()
            indexed = {p for p, r in scanner.manifest.files.items() if r.indexed}
            event(f"folders left out: {bool(scanner.git_ignores.left_out)}")
        finally:
            scanner.manifest.close()
        assert must <= indexed <= notes, (sorted(must - indexed), sorted(indexed - notes))

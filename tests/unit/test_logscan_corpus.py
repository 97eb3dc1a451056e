"""The log analyser on the recorded corpus: every family's first error and the user's own line.

The logs are real failing builds recorded by tests/fixtures/logs/corpus/record_*.sh; the
expected answers in manifest.tsv were written by reading each log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from k0maru_offload._engine import OffloadEngine, next_step
from k0maru_offload._logscan import is_user_path, scan_log
from tests.fixtures.logs.manifest import FAMILY_LANGUAGES, LOGS, Case, cases

CASES = cases()
HELDOUT = cases(LOGS / "heldout")  # recorded after the analyser was written (see bench/README.md)


def test_the_corpus_is_large_and_covers_every_family():
    assert len(CASES) >= 40
    assert {c.family for c in CASES} == set(FAMILY_LANGUAGES)
    assert all(sum(c.family == fam for c in CASES) >= 5 for fam in FAMILY_LANGUAGES)
    assert sum(1 for c in CASES if len(c.path.read_text().splitlines()) >= 500) >= 5


@pytest.mark.parametrize("case", CASES + HELDOUT, ids=lambda c: f"{c.family}-{c.name}")
def test_first_error_and_user_location(case: Case):
    findings = scan_log(case.path.read_text().splitlines())
    assert case.error_ok(findings.first_error), findings.first_error
    assert case.location_ok(findings.location), findings.location
    assert findings.language in FAMILY_LANGUAGES[case.family]
    assert findings.error_line > 0


@pytest.mark.parametrize(
    "case", [c for c in CASES if len(c.path.read_text().splitlines()) >= 500], ids=lambda c: c.name
)
def test_long_logs_are_cut_to_3_percent_with_error_and_location_kept(case: Case, vault: Path):
    text = case.path.read_text()
    result = OffloadEngine(vault, 50, 10**8).offload(text, command=case.name, exit_code=1)
    answer = f"{result.summary}\n{next_step(result.node_id)}\n{result.mermaid}"  # what an agent receives
    assert len(answer) <= 0.03 * len(text), (len(answer), len(text))
    assert case.error_parts[0] in result.summary and case.location in result.summary


@pytest.mark.parametrize(
    "path",
    [
        "/usr/lib/python3.11/asyncio/runners.py",
        "/root/.venv/lib/python3.11/site-packages/requests/api.py",
        "/usr/lib/go-1.19/src/testing/testing.go",
        "/usr/local/go/src/runtime/panic.go",
        "/usr/include/c++/12/bits/stl_algo.h",
        "node:internal/modules/esm/resolve",
        "file:///app/node_modules/jest-circus/build/utils.js",
        "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs",
        "/home/u/.cargo/registry/src/index/serde-1.0.0/src/de.rs",
        "../../../../src/libsanitizer/asan/asan_new_delete.cpp",
        "vendor/github.com/pkg/errors/errors.go",
        "/usr/lib/jvm/java-17/lib/src.zip",
    ],
)
def test_library_frames_are_never_the_location(path: str):
    assert not is_user_path(path)


@pytest.mark.parametrize(
    "path", ["src/main.rs", "/tmp/k0rec/x/store_test.go", "internal/app/server.go", "tests/test_x.py", "main.c"]
)
def test_user_frames_are(path: str):
    assert is_user_path(path)


def test_warnings_are_never_the_first_error():
    log = [
        "\x1b[33mwarning\x1b[0m: unused variable: `x`",
        "[WARNING] /abs/A.java:[3,4] deprecated",
        "/app/x.py:3: DeprecationWarning: old",
        "src/a.c:3:5: warning: unused [-Wunused]",
        "npm WARN deprecated glob@7",
        "src/b.c:9:2: error: expected ';'",
    ]
    f = scan_log(log)
    assert f.error_line == 6 and f.location == "src/b.c:9:2" and f.warnings == 5

"""LogScanner: the first error of a build or test log, where it happened, and counts.

Recognised (first match by line order wins):
  Rust/cargo   error[E0502]: …  + `--> src/main.rs:4:5`; `thread 'x' panicked at src/x.rs:5:9`
  Python       Traceback … last `File "x.py", line N` + the exception line; pytest `x.py:12: AssertionError`
  Go           `panic: …`, `fatal error: all goroutines are asleep - deadlock!` + first non-runtime
               `x.go:N`; `--- FAIL: TestX` + `x_test.go:N: msg`; compiler `./x.go:3:2: msg`
  TypeScript   `src/a.ts(3,7): error TS2322: …` and `src/a.ts:3:7 - error TS2322: …`
  C/C++        gcc/clang `main.c:3:5: error: …`, linker `undefined reference to …`
  Java         javac `Main.java:3: error: …`; `Exception in thread "main" x.y.Exc: …` + `at …(Main.java:5)`
  Node         `TypeError: …` + `at … (file.js:3:9)`
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LOOKAHEAD = 40


@dataclass
class LogFindings:
    first_error: str = ""
    error_code: str = ""
    location: str = ""
    error_line: int = 0  # 1-based; 0 = none found
    language: str = ""
    errors: int = 0
    warnings: int = 0
    failed_tests: int = 0


_RUST_ERROR = re.compile(r"^error(?:\[(E\d{4})\])?: (.+)")
_RUST_ARROW = re.compile(r"^\s*--> (\S+:\d+:\d+)")
_RUST_PANIC = re.compile(r"thread '[^']*'(?: \(\d+\))? panicked at (?:'(.*)', )?(\S+:\d+:\d+)")
_PY_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_PY_FILE = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_PY_EXC = re.compile(
    r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure)|AssertionError|StopIteration)\b:?\s*(.*)"
)
_PYTEST_LOC = re.compile(r"^(\S+\.py):(\d+): (\w+)")
_PYTEST_E = re.compile(r"^E\s{2,}(.+)")
_GO_PANIC = re.compile(r"^(panic|fatal error): (.+)")
_GO_LOC = re.compile(r"^\s+(\S+\.go:\d+)")
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_GO_TEST_LOC = re.compile(r"^\s+(\S+_test\.go:\d+): (.+)")
_GO_COMPILE = re.compile(r"^(\.?/?[\w./-]+\.go):(\d+):(\d+): (.+)")
_TS_PAREN = re.compile(r"^(\S+\.(?:tsx?|mts|cts))\((\d+),(\d+)\): error (TS\d+): (.+)")
_TS_COLON = re.compile(r"^(\S+\.(?:tsx?|mts|cts)):(\d+):(\d+) - error (TS\d+): (.+)")
_CC = re.compile(r"^(\S+\.(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|m|mm)):(\d+):(\d+): (?:fatal )?error: (.+)")
_LINKER = re.compile(r"(undefined reference to .+|ld: symbol\(s\) not found.*|ld returned \d+ exit status)")
_JAVAC = re.compile(r"^(\S+\.java):(\d+): error: (.+)")
_JAVA_EXC = re.compile(r'^Exception in thread "[^"]*" ([\w.$]+)(?::\s*(.*))?')
_JAVA_AT = re.compile(r"^\s+at .+\((\S+\.(?:java|kt|scala)):(\d+)\)")
_NODE_EXC = re.compile(r"^(?:Uncaught )?((?:[A-Z]\w*)?Error)(?: \[(\w+)\])?: (.+)")
_NODE_AT = re.compile(r"^\s+at (?:.+ \()?((?:file://)?[^()\s]+:\d+:\d+)\)?")

_WARNING = re.compile(
    r"^warning(\[|:)|: warning[:\s]|^WARN\b|\bDeprecationWarning\b|^\S+\.\w+:\d+(:\d+)?: warning", re.IGNORECASE
)
_ERROR_COUNT = re.compile(
    r"^error(\[E\d+\])?:|: (fatal )?error[: ]|error TS\d+|^Traceback \(|^panic: |^fatal error: |^Exception in thread|^\w*Error: "
)
_FAILED_TEST = re.compile(r"^test \S+ \.\.\. FAILED|^FAILED \S|^\s*--- FAIL: |^\s+✕ |^\s*✗ |^not ok \d+")


def _strip(line: str) -> str:
    return _ANSI.sub("", line).rstrip("\r")


def scan_log(lines: list[str]) -> LogFindings:
    clean = [_strip(line) for line in lines]
    findings = LogFindings()
    for line in clean:
        if _ERROR_COUNT.search(line):
            findings.errors += 1
        elif _WARNING.search(line):
            findings.warnings += 1
        if _FAILED_TEST.search(line):
            findings.failed_tests += 1
    for i in range(len(clean)):
        if _first_error_at(clean, i, findings):
            findings.error_line = i + 1
            break
    return findings


def _ahead(lines: list[str], i: int) -> list[str]:
    return lines[i + 1 : i + 1 + LOOKAHEAD]


def _first_error_at(lines: list[str], i: int, f: LogFindings) -> bool:
    line = lines[i]
    if m := _RUST_ERROR.match(line):
        if m.group(2).startswith(("aborting due to", "could not compile", "test failed, to rerun")):
            return False
        f.language, f.error_code, f.first_error = "rust", m.group(1) or "", line.strip()
        f.location = next((a.group(1) for a in map(_RUST_ARROW.match, _ahead(lines, i)) if a), "")
        return True
    if m := _RUST_PANIC.search(line):
        f.language, f.error_code, f.location = "rust", "panic", m.group(2)
        message = m.group(1) or next((n.strip() for n in _ahead(lines, i)[:1] if n.strip()), "")
        f.first_error = f"panicked: {message}".strip()
        return True
    if _PY_TRACEBACK.match(line):
        f.language = "python"
        last_file = ""
        for nxt in _ahead(lines, i) + lines[i + 1 + LOOKAHEAD : i + 400]:
            if fm := _PY_FILE.match(nxt):
                last_file = f"{fm.group(1)}:{fm.group(2)}"
            elif not nxt.startswith((" ", "\t")) and (em := _PY_EXC.match(nxt)):
                f.error_code, f.first_error = em.group(1), nxt.strip()
                break
        f.location = last_file
        return bool(f.first_error or last_file)
    if m := _PYTEST_LOC.match(line):
        f.language, f.error_code, f.location = "python", m.group(3), f"{m.group(1)}:{m.group(2)}"
        messages = [e.group(1) for e in map(_PYTEST_E.match, lines[max(0, i - 30) : i]) if e]
        f.first_error = f"{m.group(3)}: {messages[0]}" if messages else m.group(3)
        return True
    if m := _GO_PANIC.match(line):
        f.language, f.error_code, f.first_error = "go", m.group(1), line.strip()
        locations = [g.group(1) for g in map(_GO_LOC.match, _ahead(lines, i)) if g]
        f.location = next(
            (loc for loc in locations if "/runtime/" not in loc and "/src/testing/" not in loc),
            locations[0] if locations else "",
        )
        return True
    if m := _GO_FAIL.match(line):
        f.language, f.error_code = "go", "test failure"
        detail = next((g for g in map(_GO_TEST_LOC.match, _ahead(lines, i)[:10]) if g), None)
        f.first_error = f"--- FAIL: {m.group(1)}" + (f": {detail.group(2)}" if detail else "")
        f.location = detail.group(1) if detail else ""
        return True
    if m := _GO_COMPILE.match(line):
        f.language, f.error_code = "go", "compile"
        f.location, f.first_error = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", m.group(4).strip()
        return True
    if m := _TS_PAREN.match(line) or _TS_COLON.match(line):
        f.language, f.error_code = "typescript", m.group(4)
        f.location, f.first_error = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", f"error {m.group(4)}: {m.group(5)}"
        return True
    if m := _CC.match(line):
        f.language, f.error_code = "c/c++", "error"
        f.location, f.first_error = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", f"error: {m.group(4)}"
        return True
    if m := _JAVAC.match(line):
        f.language, f.error_code = "java", "javac"
        f.location, f.first_error = f"{m.group(1)}:{m.group(2)}", f"error: {m.group(3)}"
        return True
    if m := _JAVA_EXC.match(line):
        f.language, f.error_code = "java", m.group(1)
        f.first_error = line.strip()
        at = next((a for a in map(_JAVA_AT.match, _ahead(lines, i)) if a), None)
        f.location = f"{at.group(1)}:{at.group(2)}" if at else ""
        return True
    if m := _NODE_EXC.match(line):
        at = next((a for a in map(_NODE_AT.match, _ahead(lines, i)[:10]) if a), None)
        if at is None:
            return False
        f.language, f.error_code, f.first_error = "node", m.group(2) or m.group(1), line.strip()
        f.location = at.group(1).removeprefix("file://")
        return True
    if m := _LINKER.search(line):
        f.language, f.error_code, f.first_error = "c/c++", "link", m.group(1)
        return True
    return False

"""LogScanner: the first real error of a build or test log, and the user's own line that caused it.

Lines are read in order with ANSI codes stripped; the first line that a detector recognises
as an error wins. Warnings are never errors (a `[WARNING]`, `warning:` or `…Warning:` line is
skipped), and a location is always the first frame in the user's own sources: frames in the
standard library, a runtime, a test framework or a vendored/installed package are passed over
(`is_user_path`, `_java_user_frame`). Detectors, by family:

  Rust     `error[E0502]: …` + `--> src/x.rs:4:5`; `thread 'x' panicked at src/x.rs:5:9`
           (a backtrace's `at ./src/…` when the panic points into std)
  Python   tracebacks (innermost user frame + the exception line); pytest failure sections
           (`E   …` lines, innermost user `x.py:N:` frame; collection errors; asyncio)
  Go       compiler `x.go:3:2: …`; `--- FAIL: TestX/case` with its `x_test.go:35: msg` (also
           under `go test -v`); `panic:` (first frame outside runtime/ and testing/)
  Java     javac `X.java:3: error:`; Maven `[ERROR] /abs/X.java:[29,15] …`; Surefire
           `<<< ERROR!`/`<<< FAILURE!` + exception + first user `at …(X.java:31)`;
           `Exception in thread` (+ the root `Caused by:`)
  Node/TS  tsc (`a.ts(3,7): error TS…`, `a.ts:3:7 - error TS…`); node:test TAP (`not ok`
           + its YAML) and spec (`✖`) reports; jest `●`; `TypeError: …` + first user `at`
  C/C++    gcc/clang `x.c:3:5: error:` (a library header's error → the user's `required
           from here`/`requested here` line); ld `undefined reference`; CMake Error;
           `Assertion … failed`; AddressSanitizer & co (first user frame); UBSan
  other    a line that says `error`/`ERROR`/`FAILED` with a `path:line` near it
gcc and javac in a Chinese or Japanese locale (`x.c:3:5: 错误：…`, `X.java:3: エラー: …`, and
`警告：`/`附注：` for warnings and notes) are read as in English.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
LOOKAHEAD = 60


@dataclass
class LogFindings:
    first_error: str = ""
    error_code: str = ""  # E0502, TS2322, KeyError, heap-use-after-free, test failure, …
    location: str = ""  # file:line[:col] in the user's own sources, "" if none
    error_line: int = 0  # 1-based; 0 = none found
    language: str = ""
    errors: int = 0
    warnings: int = 0
    failed_tests: int = 0


# --- what is the user's code -------------------------------------------------------------------

_LIBRARY_PATH = re.compile(
    r"(/site-packages/|/dist-packages/|/lib/python\d|<frozen |^<|/usr/(local/)?(lib|include|share)/"
    r"|/usr/lib/go|/src/runtime/|/src/testing/|/go/pkg/mod/|/libexec/|^node:|/node_modules/"
    r"|/rustc/[0-9a-f]+/|/\.cargo/registry/|/\.rustup/|^/?library/(std|core|alloc)/|(^|/)vendor/"
    r"|libsanitizer|^\.\./(sysdeps|csu|nptl)/|^\?\?|/\.m2/repository/|/\.gradle/caches/"
    r"|^internal/(modules|process|main|bootstrap|timers|test_runner)/)"
)
_JAVA_LIBRARY = re.compile(
    r"^(java|javax|jdk|sun|com\.sun|org\.junit|junit|org\.opentest4j|org\.apache\.maven|org\.gradle"
    r"|org\.testng|kotlin|scala|org\.springframework|org\.mockito|worker\.org\.gradle)\."
)


def is_user_path(path: str) -> bool:
    """False for frames in a standard library, runtime, test framework or installed package."""
    p = path.removeprefix("file://")
    return bool(p) and not _LIBRARY_PATH.search(p)


MAX_LINE = 1000  # analysed characters per line: errors and locations start lines, and it bounds the cost


def _strip(line: str) -> str:
    return _ANSI.sub("", line[: 4 * MAX_LINE]).rstrip("\r")[:MAX_LINE]


# --- patterns ----------------------------------------------------------------------------------

# gcc and javac in a Chinese or Japanese locale: 错误：/ エラー: for error, 警告：/ 警告: for
# warning, 附注：/ 備考: for note, 致命错误：/ 致命的エラー: for fatal error
_LOCAL_ERROR = r"(?:致命)?错误[:：]|(?:致命的)?エラー[:：]"
_WARNING = re.compile(  # linear on any line: no unanchored `\w+` before a literal
    r"^\s*(\[(WARNING|WARN)\]|[Ww]arning(\[|:)|WARN\b|npm WARN)|: [Ww]arning[:\s]|^\S+\.\w+:\d+(:\d+)?: (warning|note)\b"
    r"|Warning: |^\S+\.\w+:\d+(:\d+)?: (?:警告|附注|備考)[:：]"
)
_ERROR_COUNT = re.compile(
    rf"^error(\[E\d+\])?:|: (fatal )?error[: ]|: (?:{_LOCAL_ERROR})|error TS\d+|^Traceback \(|^panic: |^fatal error: "
    r"|^Exception in thread|^\s*\w*Error(?: \[\w+\])?: |^==\d+==ERROR: |^\[ERROR\] /|^CMake Error|<<< (ERROR|FAILURE)!"
)
_FAILED_TEST = re.compile(
    r"^test \S+ \.\.\. FAILED|^FAILED \S|^\s*--- FAIL: \S+/?\S* \(|^\s+✕ |^\s*✖ |^\s*not ok \d+|<<< (FAILURE|ERROR)!$"
    r"|^\s*● (?!Console)|\*\*\*Failed"
)

_RUST_ERROR = re.compile(r"^error(?:\[(E\d{4})\])?: (.+)")
_RUST_NOT_ERROR = ("aborting due to", "could not compile", "test failed, to rerun", "build failed")
_RUST_ARROW = re.compile(r"^\s*--> (\S+:\d+:\d+)")
_RUST_PANIC = re.compile(r"thread '[^']*'(?: \(\d+\))? panicked at (?:'(.*)', )?(\S+?:\d+:\d+)")
_RUST_FRAME = re.compile(r"^\s+at (\S+?:\d+:\d+)$")

_PY_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_PY_FILE = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_PY_EXC = re.compile(
    r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Timeout|Group)|AssertionError|StopIteration"
    r"|KeyboardInterrupt|GeneratorExit)\b:?\s*(.*)"
)
_PYTEST_HEADER = re.compile(r"^={3,} (FAILURES|ERRORS) ={3,}$")
_PYTEST_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$|^={3,} .* ={3,}$")
_PYTEST_FRAME = re.compile(r"^(\S+\.py):(\d+):(?: in (\S+)| ([\w.]+))?\s*$")
_PYTEST_E = re.compile(r"^E\s+(.+)")

_GO_COMPILE = re.compile(r"^(\.?/?[\w./@+-]+\.go):(\d+):(\d+): (.+)")
_GO_PANIC = re.compile(r"^(panic|fatal error): (.+)")
_GO_FRAME = re.compile(r"^\s+(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$")
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_GO_RUN = re.compile(r"^\s*=== (RUN|CONT|PAUSE|NAME)\s+(\S+)")
_GO_TEST_MSG = re.compile(r"^\s+(\S+\.go):(\d+): (.+)")

_TS_PAREN = re.compile(r"^(\S+\.(?:tsx?|mts|cts|vue|svelte))\((\d+),(\d+)\): error (TS\d+): (.+)")
_TS_COLON = re.compile(r"^(\S+\.(?:tsx?|mts|cts|vue|svelte)):(\d+):(\d+) - error (TS\d+): (.+)")

_CC_EXT = r"(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|ipp|tpp|inl|m|mm|cu)"
_CC = re.compile(
    rf"^(\S+\.{_CC_EXT}|\S+/include/c\+\+/[^\s:]+):(\d+):(\d+): (?:(?:fatal )?error: |(?:{_LOCAL_ERROR}) ?)(.+)"
)
_CC_REQUIRED = re.compile(
    rf"^(\S+\.{_CC_EXT}):(\d+):(\d+):\s+(?:required from here|note: in instantiation of .* requested here)"
)
_CC_INCLUDED = re.compile(rf"^(?:In file included from|\s+from) (\S+\.{_CC_EXT}):(\d+)[:,]")
_LINKER = re.compile(
    r"(?:^(\S+?):\(\.\w+[^)]*\): )?(undefined reference to .+|multiple definition of .+|ld: symbol\(s\) not found.*"
    r"|ld: cannot find .+|undefined symbol: .+)"
)
_CMAKE = re.compile(r"^CMake Error(?: at (\S+?):(\d+)(?: \((\w+)\))?)?: ?(.*)")
_C_ASSERT = re.compile(r"^(?:\S+: )?(\S+\.\w+):(\d+): (\S.*?): Assertion [`'](.+)' failed\.")
_SANITIZER = re.compile(r"^==\d+==ERROR: (\w+Sanitizer): (\S+)|^WARNING: (ThreadSanitizer): (.+?)(?: \(pid=\d+\))?$")
_SAN_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (.+?) (\S+?):(\d+)(?::(\d+))?$")
_UBSAN = re.compile(rf"^(\S+\.{_CC_EXT}):(\d+):(\d+): runtime error: (.+)")

_JAVAC = re.compile(rf"^(\S+\.(?:java|kt|scala|groovy)):(\d+): (?:error: |(?:{_LOCAL_ERROR}) ?)(.+)")
_MAVEN_COMPILE = re.compile(r"^\[ERROR\] (?:\S+: )?(\S+\.(?:java|kt|scala|groovy)):\[(\d+),(\d+)\] (.+)")
_KOTLIN = re.compile(r"^e: (?:file://)?(\S+\.kts?):(\d+):(\d+) (.+)")
_SUREFIRE = re.compile(r"^\[ERROR\] (\S+?)(?:\(\S+\))?\s+(?:--\s+)?Time elapsed: .*<<< (ERROR|FAILURE)!$")
_JAVA_EXC_LINE = re.compile(r"^([a-z][\w$]*(?:\.[\w$]+)+|[A-Z][\w$]*(?:Error|Exception|Failure))(?::\s*(.*))?$")
_JAVA_EXC = re.compile(r'^Exception in thread "[^"]*" ([\w.$]+)(?::\s*(.*))?')
_JAVA_AT = re.compile(r"^\s*at (?:[\w.-]+/)?([\w.$<>]+)\((\S+?\.(?:java|kt|scala|groovy)):(\d+)\)")
_JAVA_CAUSED = re.compile(r"^\s*Caused by: ([\w.$]+)(?::\s*(.*))?")

_NODE_EXC = re.compile(r"^\s*(?:Uncaught )?([A-Z]\w*(?:Error|Exception)|Error)(?: \[(\w+)\])?: (.+)")
_NODE_AT = re.compile(r"^\s*(?:at )?(?:.*? \()?((?:file://)?[^()\s]+?):(\d+):(\d+)\)?$")
_NODE_HEADER = re.compile(r"^((?:file://)?/\S+?\.[cm]?[jt]sx?):(\d+)$")
_TAP_NOT_OK = re.compile(r"^\s*not ok \d+ - (.+)")
_SPEC_FAIL = re.compile(r"^\s*✖ (.+?)(?: \([\d.]+m?s\))?$")
_JEST = re.compile(r"^\s*● (?!Console\b)(.+)")

_GENERIC = re.compile(r"(^|\s|\[)(error|ERROR|Error|FAILED|FATAL|fatal|错误|エラー)(\]|:|：|\s|$)")
_GENERIC_LOC = re.compile(r"(?<![\w./-])([\w./-]+\.[A-Za-z]{1,6}):(\d+)(?::(\d+))?")


# --- the scan ----------------------------------------------------------------------------------


# Cheap substring tests before the regexes: most lines of a long log are none of these.
_ERROR_WORDS: tuple[str, ...] = (
    *("error", "panic", "traceback", "fail", "fatal", "exception", "assert", "undefined", "multiple definition"),
    *("ld:", "sanitizer", "not ok", "✖", "●", ".go:", "<<<", "caused by", "e: ", "data race", "错误", "エラー"),
)
_FAIL_WORDS = ("fail", "not ok", "✕", "✖", "●", "<<<")


def _may_be_error(line: str, low: str) -> bool:
    return line.startswith("E ") or any(k in low for k in _ERROR_WORDS)


def _is_warning(line: str, low: str) -> bool:
    """A warning or a note (English, or gcc's and javac's Chinese and Japanese), not a sanitizer's
    `WARNING: ThreadSanitizer` report; the substrings first, the patterns only then."""
    may_be = "warn" in low or "警告" in line or "附注" in line or "備考" in line
    return may_be and bool(_WARNING.search(line)) and not _SANITIZER.match(line)


def scan_log(lines: list[str]) -> LogFindings:
    clean = [_strip(line) for line in lines]
    findings = LogFindings()
    for line in clean:
        low = line.lower()
        if _is_warning(line, low):
            findings.warnings += 1
        elif _may_be_error(line, low) and _ERROR_COUNT.search(line):
            findings.errors += 1
        if any(k in low for k in _FAIL_WORDS) and _FAILED_TEST.search(line):
            findings.failed_tests += 1
    scanner = _Scanner(clean)
    for i in range(len(clean)):
        if scanner.at(i, findings):
            break
    else:
        for i in range(len(clean)):
            if _may_be_error(clean[i], clean[i].lower()) and _generic(clean, i, findings):
                findings.error_line = findings.error_line or i + 1
                break
    return findings


class _Scanner:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.pytest_from = next((i for i, ln in enumerate(lines) if _PYTEST_HEADER.match(ln)), len(lines))
        self.go_failed: list[str] = [m.group(1) for m in map(_GO_FAIL.match, lines) if m]
        self.detectors: list[Callable[[int, LogFindings], bool]] = [
            self._rust,
            self._python_traceback,
            self._pytest,
            self._go,
            self._typescript,
            self._sanitizer,
            self._cc,
            self._java,
            self._node,
            self._cmake_ctest,
        ]

    def at(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        low = line.lower()
        if not _may_be_error(line, low) or _is_warning(line, low):
            return False
        for detect in self.detectors:
            if detect(i, f):
                f.error_line = f.error_line or i + 1
                return True
        return False

    def ahead(self, i: int, n: int = LOOKAHEAD) -> list[str]:
        return self.lines[i + 1 : i + 1 + n]

    # Rust ---------------------------------------------------------------------------------

    def _rust(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        if (m := _RUST_ERROR.match(line)) and not m.group(2).startswith(_RUST_NOT_ERROR):
            arrow = None
            for nxt in self.ahead(i, 30):
                if _RUST_ERROR.match(nxt):
                    break
                if a := _RUST_ARROW.match(nxt):
                    arrow = a
                    break
            if arrow is None and not m.group(1):
                return False  # a plain `error: …` without a Rust location: not rustc's
            f.language, f.error_code, f.first_error = "rust", m.group(1) or "error", line.strip()
            f.location = arrow.group(1) if arrow else ""
            return True
        if m := _RUST_PANIC.search(line):
            f.language, f.error_code = "rust", "panic"
            message = m.group(1) or next((n.strip() for n in self.ahead(i, 1) if n.strip()), "")
            f.first_error = f"panicked: {message}".strip()
            f.location = m.group(2)
            if not is_user_path(f.location) or f.location.startswith("/rustc/"):
                frames = [fr.group(1) for fr in map(_RUST_FRAME.match, self.ahead(i, 200)) if fr]
                f.location = next((p for p in frames if is_user_path(p)), f.location)
            return True
        return False

    # Python -------------------------------------------------------------------------------

    def _python_traceback(self, i: int, f: LogFindings) -> bool:
        if not _PY_TRACEBACK.match(self.lines[i]):
            return False
        frames: list[str] = []
        for nxt in self.lines[i + 1 : i + 2000]:
            if fm := _PY_FILE.match(nxt):
                frames.append(f"{fm.group(1)}:{fm.group(2)}")
            elif not nxt.startswith((" ", "\t")) and (em := _PY_EXC.match(nxt)):
                f.error_code, f.first_error = em.group(1).rsplit(".", 1)[-1], nxt.strip()
                break
        if not frames and not f.first_error:
            return False
        f.language = "python"
        f.location = _innermost_user(frames)
        return True

    def _pytest(self, i: int, f: LogFindings) -> bool:
        if i <= self.pytest_from or not (m := _PYTEST_E.match(self.lines[i])):
            return False
        start = i
        while start > self.pytest_from and not _PYTEST_SECTION.match(self.lines[start]):
            start -= 1
        end = i + 1
        while end < len(self.lines) and not _PYTEST_SECTION.match(self.lines[end]):
            end += 1
        section = self.lines[start:end]
        frames: list[str] = []
        exc = ""
        for ln in section:
            if fm := _PYTEST_FRAME.match(ln):
                frames.append(f"{fm.group(1)}:{fm.group(2)}")
                exc = fm.group(4) or exc
        message = m.group(1).strip()
        em = _PY_EXC.match(message)
        if em:
            exc = em.group(1).rsplit(".", 1)[-1]
        f.language, f.error_code = "python", exc or "AssertionError"
        f.first_error = message if em or not exc else f"{exc}: {message}"
        f.location = _innermost_user(frames)
        return True

    # Go -----------------------------------------------------------------------------------

    def _go(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        if m := _GO_COMPILE.match(line):
            f.language, f.error_code = "go", "compile"
            f.location, f.first_error = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", m.group(4).strip()
            return True
        if m := _GO_PANIC.match(line):
            f.language, f.error_code, f.first_error = "go", m.group(1), line.strip()
            f.location = self._go_frame(i)
            return True
        if m := _GO_FAIL.match(line):
            name = self._go_leaf(m.group(1))
            at = next(
                (j for j in range(i, len(self.lines)) if (g := _GO_FAIL.match(self.lines[j])) and g.group(1) == name), i
            )
            msg, msg_line = self._go_message(name, at)
            f.language, f.error_code = "go", "test failure"
            if msg:
                f.first_error = f"--- FAIL: {name}: {msg.group(3)}"
                f.location = f"{msg.group(1)}:{msg.group(2)}"
                f.error_line = msg_line + 1
                return True
            panic = next((j for j in range(at, min(at + 8, len(self.lines))) if _GO_PANIC.match(self.lines[j])), None)
            f.first_error = f"--- FAIL: {name}" + (f": {self.lines[panic].strip()}" if panic is not None else "")
            f.location = self._go_frame(panic) if panic is not None else ""
            if panic is not None:
                f.error_code = "panic"
            f.error_line = (panic if panic is not None else at) + 1
            return True
        return False

    def _go_frame(self, i: int) -> str:
        frames = [f"{g.group(1)}:{g.group(2)}" for g in map(_GO_FRAME.match, self.ahead(i, 400)) if g]
        return next((p for p in frames if is_user_path(p)), frames[0] if frames else "")

    def _go_leaf(self, name: str) -> str:
        """The first failing subtest under `name` that has no failing subtest of its own."""
        for other in self.go_failed:
            if (other == name or other.startswith(name + "/")) and not any(
                o.startswith(other + "/") for o in self.go_failed
            ):
                return other
        return name

    def _go_message(self, name: str, at: int) -> tuple[re.Match[str] | None, int]:
        for j in range(at + 1, min(at + 12, len(self.lines))):  # plain `go test`: indented after the FAIL
            if _GO_FAIL.match(self.lines[j]) or _GO_RUN.match(self.lines[j]):
                break
            if g := _GO_TEST_MSG.match(self.lines[j]):
                return g, j
        run = [j for j in range(at) if (r := _GO_RUN.match(self.lines[j])) and r.group(2) == name]
        for start in reversed(run):  # `go test -v`: the message follows `=== RUN   name`
            for j in range(start + 1, min(start + 200, len(self.lines))):
                if _GO_FAIL.match(self.lines[j]) or _GO_RUN.match(self.lines[j]):
                    break
                if g := _GO_TEST_MSG.match(self.lines[j]):
                    return g, j
        return None, at

    # TypeScript ---------------------------------------------------------------------------

    def _typescript(self, i: int, f: LogFindings) -> bool:
        m = _TS_PAREN.match(self.lines[i]) or _TS_COLON.match(self.lines[i])
        if not m:
            return False
        f.language, f.error_code = "typescript", m.group(4)
        f.location, f.first_error = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", f"error {m.group(4)}: {m.group(5)}"
        return True

    # C and C++ ----------------------------------------------------------------------------

    def _sanitizer(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        if line.startswith("WARNING: DATA RACE"):  # Go's race detector: an error despite the word
            f.language, f.error_code, f.first_error = "go", "data race", "DATA RACE"
            f.location = self._go_frame(i)
            return True
        if m := _SANITIZER.match(line):
            f.language = "c/c++"
            f.error_code = m.group(2) or (m.group(4) or "").split()[0]
            f.first_error = line.split("ERROR: ", 1)[-1].strip() if m.group(1) else line.strip()
            frames = []
            for nxt in self.ahead(i, 80):
                if nxt.startswith("SUMMARY:"):
                    break
                if s := _SAN_FRAME.match(nxt.strip()):
                    frames.append(f"{s.group(2)}:{s.group(3)}")
            f.location = next((p for p in frames if is_user_path(p)), "")
            return True
        if m := _UBSAN.match(line):
            f.language, f.error_code = "c/c++", "runtime error"
            f.location, f.first_error = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", f"runtime error: {m.group(4)}"
            return True
        return False

    def _cc(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        if m := _CC.match(line):
            f.language, f.error_code = "c/c++", "error"
            f.first_error = f"error: {m.group(4)}"
            f.location = f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
            if not is_user_path(m.group(1)):
                f.location = self._cc_user_line(i) or f.location
            return True
        if (m := _C_ASSERT.match(line)) and is_user_path(m.group(1)):
            f.language, f.error_code = "c/c++", "assertion"
            f.location, f.first_error = f"{m.group(1)}:{m.group(2)}", f"Assertion `{m.group(4)}' failed in {m.group(3)}"
            return True
        if m := _LINKER.search(line):
            f.language, f.error_code, f.first_error = "c/c++", "link", m.group(2)
            f.location = m.group(1) if m.group(1) and is_user_path(m.group(1)) else ""
            return True
        return False

    def _cc_user_line(self, i: int) -> str:
        """A compiler error inside a library header: the user's line that instantiated it."""
        for j in range(i - 1, max(-1, i - 60), -1):  # gcc prints the chain before the error
            if (r := _CC_REQUIRED.match(self.lines[j])) and is_user_path(r.group(1)):
                return f"{r.group(1)}:{r.group(2)}:{r.group(3)}"
            if _CC.match(self.lines[j]):
                break
        for nxt in self.ahead(i, 60):  # clang prints it after
            if _CC.match(nxt):
                break
            if (r := _CC_REQUIRED.match(nxt)) and is_user_path(r.group(1)):
                return f"{r.group(1)}:{r.group(2)}:{r.group(3)}"
        for j in range(i - 1, max(-1, i - 30), -1):
            if (r := _CC_INCLUDED.match(self.lines[j])) and is_user_path(r.group(1)):
                return f"{r.group(1)}:{r.group(2)}"
        return ""

    def _cmake_ctest(self, i: int, f: LogFindings) -> bool:
        if m := _CMAKE.match(self.lines[i]):
            detail = m.group(4).strip() or next((n.strip() for n in self.ahead(i, 3) if n.strip()), "")
            f.language, f.error_code = "cmake", m.group(3) or "CMake Error"
            f.first_error = f"CMake Error: {detail}"[:300]
            f.location = f"{m.group(1)}:{m.group(2)}" if m.group(1) else ""
            return True
        return False

    # Java ---------------------------------------------------------------------------------

    def _java(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        m = _JAVAC.match(line) or _MAVEN_COMPILE.match(line) or _KOTLIN.match(line)
        if m:
            f.language, f.error_code = "java", "compile"
            col = m.group(3) if m.re is not _JAVAC else ""
            f.location = f"{m.group(1)}:{m.group(2)}" + (f":{col}" if col else "")
            f.first_error = f"error: {m.group(m.re.groups)}"
            symbol = next((n.strip() for n in self.ahead(i, 3) if "symbol:" in n), "")
            if symbol:
                f.first_error += f" ({symbol.removeprefix('[ERROR]').strip()})"
            return True
        if m := _SUREFIRE.match(line):
            exc_at = next(
                (j for j in range(i + 1, min(i + 4, len(self.lines))) if _JAVA_EXC_LINE.match(self.lines[j])), None
            )
            if exc_at is None:
                return False
            em = _JAVA_EXC_LINE.match(self.lines[exc_at])
            assert em is not None
            f.language, f.error_code = "java", em.group(1).rsplit(".", 1)[-1]
            f.first_error = f"{m.group(1)} <<< {m.group(2)}: {self.lines[exc_at].strip()}"
            f.location = self._java_location(exc_at)
            f.error_line = exc_at + 1
            return True
        if m := _JAVA_EXC.match(line):
            f.language, f.error_code = "java", m.group(1).rsplit(".", 1)[-1]
            f.first_error = line.strip()
            f.location = self._java_location(i)
            return True
        return False

    def _java_location(self, i: int) -> str:
        """First user frame of the deepest `Caused by:` (the root cause), else of the exception."""
        blocks: list[list[str]] = [[]]
        for nxt in self.ahead(i, 400):
            if _JAVA_CAUSED.match(nxt):
                blocks.append([])
            elif a := _JAVA_AT.match(nxt):
                if not _JAVA_LIBRARY.match(a.group(1)):
                    blocks[-1].append(f"{a.group(2)}:{a.group(3)}")
            elif nxt.strip() and not nxt.strip().startswith("..."):
                break
        for block in reversed(blocks):
            if block:
                return block[0]
        return ""

    # Node ---------------------------------------------------------------------------------

    def _node(self, i: int, f: LogFindings) -> bool:
        line = self.lines[i]
        if m := _TAP_NOT_OK.match(line):
            return self._tap(i, m.group(1), f)
        if (m := _SPEC_FAIL.match(line)) or (m := _JEST.match(line)):
            for j in range(i + 1, min(i + 30, len(self.lines))):
                em = _NODE_EXC.match(self.lines[j]) or (
                    re.match(r"^\s*(expect)\((.+)", self.lines[j]) if m.re is _JEST else None
                )
                if em:
                    f.language, f.error_code = "node", em.group(2) or em.group(1)
                    f.first_error = f"{m.group(1).strip()}: {self.lines[j].strip()}"
                    f.location = self._node_frame(j)
                    f.error_line = j + 1
                    return True
            return False
        if m := _NODE_EXC.match(line):
            frames = [a for a in map(_NODE_AT.match, self.ahead(i, 15)) if a and re.match(r"^\s+at ", a.string)]
            if not frames:
                return False
            f.language, f.error_code, f.first_error = "node", m.group(2) or m.group(1), line.strip()
            f.location = self._node_frame(i)
            header = next((h for h in map(_NODE_HEADER.match, self.lines[max(0, i - 6) : i]) if h), None)
            if header and is_user_path(header.group(1)) and (m.group(1) == "SyntaxError" or not f.location):
                f.location = f"{header.group(1).removeprefix('file://')}:{header.group(2)}"  # where it was thrown
            if not f.location:
                imported = re.search(r"imported from (\S+)", line)
                if imported and is_user_path(imported.group(1)):
                    f.location = imported.group(1).removeprefix("file://")
            return True
        return False

    def _node_frame(self, i: int) -> str:
        for nxt in self.ahead(i, 25):
            a = _NODE_AT.match(nxt)
            if a and is_user_path(a.group(1)):
                return f"{a.group(1).removeprefix('file://')}:{a.group(2)}:{a.group(3)}"
        return ""

    def _tap(self, i: int, name: str, f: LogFindings) -> bool:
        meta: dict[str, str] = {}
        stack: list[str] = []
        key = ""
        for nxt in self.ahead(i, 80):
            s = nxt.strip()
            if s == "..." or _TAP_NOT_OK.match(nxt) or re.match(r"^\s*ok \d+", nxt):
                break
            if kv := re.match(r"^\s*(\w+): ?(.*)$", nxt):
                key, value = kv.group(1), kv.group(2).strip()
                meta[key] = "" if value in ("|-", "|", ">-") else value.strip("'\"")
            elif key == "stack":
                stack.append(s)
            elif key in meta and not meta[key]:
                meta[key] = s
        if meta.get("failureType") == "subtestsFailed":
            return False
        f.language = "node"
        f.error_code = meta.get("code", "") or meta.get("name", "") or "test failure"
        kind = meta.get("name", "Error") + (f" [{meta['code']}]" if meta.get("code") else "")
        f.first_error = f"not ok - {name}: {kind}: {meta.get('error', '')}".strip()
        frames = [a for a in map(_NODE_AT.match, stack) if a and is_user_path(a.group(1))]
        if frames:
            a = frames[0]
            f.location = f"{a.group(1).removeprefix('file://')}:{a.group(2)}:{a.group(3)}"
        else:
            f.location = meta.get("location", "")
        return True


def _innermost_user(frames: list[str]) -> str:
    users = [p for p in frames if is_user_path(p.rsplit(":", 1)[0])]
    return users[-1] if users else (frames[-1] if frames else "")


def _generic(lines: list[str], i: int, f: LogFindings) -> bool:
    line = lines[i]
    if not _GENERIC.search(line) or _WARNING.search(line) or re.search(r"\b0 (errors?|failed)\b", line):
        return False
    f.first_error, f.error_code = line.strip()[:300], "error"
    for cand in [line, *lines[i + 1 : i + 6]]:
        if (m := _GENERIC_LOC.search(cand)) and is_user_path(m.group(1)):
            f.location = m.group(0)
            break
    return True

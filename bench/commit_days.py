"""What dating notes by their commits costs (`k0maru_common.CommitDays`), on a synthetic vault
in git: N notes written over C commits (each commit changes a few notes), built with
`git fast-import`. Prints the first read (the whole history), a read after one more commit
(only that commit), one lookup (the file's blob id, and HEAD's stamp), and a next process's
first read with the days the first kept (`saved`), in ms. `--repo DIR`: an existing repository
instead (its first read and a next process's only).

    .venv/bin/python bench/commit_days.py --notes 10000 --commits 5000 [--merged] [--workdir DIR]
    .venv/bin/python bench/commit_days.py --repo DIR
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from k0maru_common import CommitDays


def build_repo(root: Path, notes: int, commits: int, seed: int = 7, merged: bool = False) -> list[str]:
    """`merged`: every change after the first is made on a branch and merged into main by a merge
    commit of its own (a pull-request workflow), which doubles the commits."""
    rng = random.Random(seed)
    names = [f"folder{i % 50}/note {i}.md" for i in range(notes)]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    stream: list[bytes] = []
    start = 1_600_000_000

    def commit(branch: bytes, mark: int, when: int, message: bytes, parents: list[int], files: list[bytes]) -> None:
        stream.append(b"commit refs/heads/%s\nmark :%d\n" % (branch, mark))
        stream.append(b"author A <a@example.org> %d +0000\ncommitter A <a@example.org> %d +0000\n" % (when, when))
        stream.append(b"data %d\n%s\n" % (len(message), message))
        if parents:
            stream.append(b"from :%d\n" % parents[0])
        stream.extend(b"merge :%d\n" % p for p in parents[1:])
        stream.extend(files)

    main_mark = 0
    for c in range(commits):
        # the first commit writes every note; the others change 1–5 notes each
        changed = names if c == 0 else rng.sample(names, rng.randint(1, 5))
        when = start + c * 3600
        files = []
        for name in changed:
            body = f"# {name}\n\nversion {c}, {'words ' * rng.randint(20, 200)}\n".encode()
            files.append(b"M 100644 inline %s\ndata %d\n%s\n" % (name.encode(), len(body), body))
        if merged and c > 0:
            commit(b"topic", 2 * c + 1, when, b"change %d" % c, [main_mark], files)
            commit(b"main", 2 * c + 2, when + 60, b"merge change %d" % c, [main_mark, 2 * c + 1], files)
            main_mark = 2 * c + 2
        else:
            commit(b"main", 2 * c + 2, when, b"change %d" % c, [main_mark] if main_mark else [], files)
            main_mark = 2 * c + 2
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=root, check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=5_000)
    ap.add_argument("--merged", action="store_true", help="each change merged from a branch by a merge commit")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--repo", type=Path, help="an existing repository (read, not written)")
    args = ap.parse_args()
    if args.repo is not None:
        existing(args.repo.resolve())
        return
    work = args.workdir or Path(tempfile.mkdtemp(prefix="commit-days-"))
    repo = work / "vault"
    shutil.rmtree(repo, ignore_errors=True)
    t0 = time.perf_counter()
    names = build_repo(repo, args.notes, args.commits, merged=args.merged)
    shape = ", each merged from a branch" if args.merged else ""
    print(f"repo: {args.notes} notes, {args.commits} commits{shape}, built in {time.perf_counter() - t0:.1f} s")
    contents = {n: (repo / n).read_bytes() for n in names}

    days = CommitDays(repo)
    t0 = time.perf_counter()
    first = days.day(names[0], contents[names[0]])
    print(f"first read (whole history): {(time.perf_counter() - t0) * 1000:.0f} ms; {names[0]} → {first}")

    lookups = []
    for name in names[:2000]:
        t0 = time.perf_counter_ns()
        days.day(name, contents[name])
        lookups.append((time.perf_counter_ns() - t0) / 1000)
    dated = sum(1 for n in names if days.day(n, contents[n]))
    print(f"lookup: p50 {statistics.median(lookups):.1f} µs; {dated} of {len(names)} notes dated")

    (repo / names[1]).write_bytes(contents[names[1]] + b"\nmore\n")
    subprocess.run(["git", "commit", "-q", "-am", "one more"], cwd=repo, check=True)
    time.sleep(0.3)  # HEAD is looked at every 0.25 s at most
    t0 = time.perf_counter()
    after = days.day(names[1], (repo / names[1]).read_bytes())
    print(f"read after one more commit: {(time.perf_counter() - t0) * 1000:.0f} ms; {names[1]} → {after}")
    days.close()
    kept(repo, work / "commit-days.json", names[1], (repo / names[1]).read_bytes())
    if args.workdir is None:
        shutil.rmtree(work)


def kept(repo: Path, saved: Path, name: str, content: bytes) -> None:
    """A first process's read that keeps its days in `saved`, then a next process's."""
    saved.unlink(missing_ok=True)
    for label in ("a process that keeps its days", "the next process (days kept)"):
        days = CommitDays(repo, saved=saved)
        t0 = time.perf_counter()
        day = days.day(name, content)
        print(
            f"{label}: first read {(time.perf_counter() - t0) * 1000:.0f} ms, {days.commits_read} commits listed; {name} → {day}"
        )
        days.close()
    print(f"days kept: {saved.stat().st_size / 1e6:.1f} MB")


def existing(repo: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout.split(b"\0")
    name = next(n.decode() for n in tracked if n.endswith(b".md") or n.endswith(b".txt"))
    with tempfile.TemporaryDirectory() as work:
        kept(repo, Path(work) / "commit-days.json", name, (repo / name).read_bytes())


if __name__ == "__main__":
    main()

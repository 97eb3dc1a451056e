"""What dating notes by their commits costs (`k0maru_common.CommitDays`), on a synthetic vault
in git: N notes written over C commits (each commit changes a few notes), built with
`git fast-import`. Prints the first read (the whole history), a read after one more commit
(only that commit), and one lookup (the file's blob id, and HEAD's stamp), in ms.

    .venv/bin/python bench/commit_days.py --notes 10000 --commits 5000 [--workdir DIR]
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


def build_repo(root: Path, notes: int, commits: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    names = [f"folder{i % 50}/note {i}.md" for i in range(notes)]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    stream: list[bytes] = []
    start = 1_600_000_000
    for c in range(commits):
        # the first commit writes every note; the others change 1–5 notes each
        changed = names if c == 0 else rng.sample(names, rng.randint(1, 5))
        when = start + c * 3600
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"author A <a@example.org> %d +0000\ncommitter A <a@example.org> %d +0000\n" % (when, when))
        message = b"change %d" % c
        stream.append(b"data %d\n%s\n" % (len(message), message))
        for name in changed:
            body = f"# {name}\n\nversion {c}, {'words ' * rng.randint(20, 200)}\n".encode()
            stream.append(b"M 100644 inline %s\ndata %d\n%s\n" % (name.encode(), len(body), body))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=root, check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=5_000)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="commit-days-"))
    repo = work / "vault"
    shutil.rmtree(repo, ignore_errors=True)
    t0 = time.perf_counter()
    names = build_repo(repo, args.notes, args.commits)
    print(f"repo: {args.notes} notes, {args.commits} commits, built in {time.perf_counter() - t0:.1f} s")
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
    if args.workdir is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

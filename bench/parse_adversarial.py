"""How the scanner's parse scales on lines a generator, a paste or a hostile file can write.

Each case is parsed at N and 2N repetitions; a time that doubles is linear, one that quadruples
is quadratic (a pattern scanning from each start to the line's end). Also YAML alias bombs.

    .venv/bin/python bench/parse_adversarial.py [--n 20000] [--no-bombs]
"""

from __future__ import annotations

import argparse
import itertools
import time

from k0maru_scanner._markdown import parse_note

CASES = {
    "[x](http://a.md": "[x](http://a.md",
    "[a](": "[a](",
    "](": "](",
    '[a](b.md "': '[a](b.md "',
    "[a](<": "[a](<",
    "[[a|": "[[a|",
    "`a": "`a",
    "``a`": "``a`",
    "#a ": "#a ",
    "a::": "a::",
    "((": "((",
    "中": "中",
}
LINES = {  # whole lines built around a repeated run
    "heading, ' #' run": lambda n: "# a" + " #" * n + " x",
    "heading, blank run": lambda n: "# a" + " " * n + "x",
    "property, blank run": lambda n: "status:: a" + " " * n + "b",
    "tag line": lambda n: "tags: " + "a, " * n,
    "20 headings per 1000": lambda n: "\n".join("###### h" for _ in range(n // 50)),
}


def bomb(levels: int) -> str:
    names = "abcdefghijklmnop"
    lines = [f"a: &a [{', '.join(['lol'] * 9)}]"]
    lines += [f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]" for p, k in itertools.pairwise(names[:levels])]
    return "---\n" + "\n".join(lines) + f"\ntags: *{names[levels - 1]}\n---\n# Bomb\n"


def timed(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        parse_note("x.md", text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000, help="repetitions (and twice as many)")
    parser.add_argument("--no-bombs", action="store_true", help="leave the YAML bombs out (an old parser never ends)")
    args = parser.parse_args()
    n = args.n
    print(f"{'case':24s} {'chars':>9s} {'N ms':>9s} {'2N ms':>9s} {'ratio':>6s}")
    rows = [(name, lambda k, unit=unit: unit * k) for name, unit in CASES.items()] + list(LINES.items())
    for name, build in rows:
        one, two = build(n) + "\n\n# T\n", build(2 * n) + "\n\n# T\n"  # first: where a page property is read
        a, b = timed(one), timed(two)
        print(f"{name:24s} {len(one):9,d} {a * 1000:9.1f} {b * 1000:9.1f} {b / max(a, 1e-9):6.1f}")
    for levels in () if args.no_bombs else (6, 9, 12):
        text = bomb(levels)
        print(f"YAML bomb 9^{levels:<14d} {len(text):9,d} {timed(text) * 1000:9.2f}")


if __name__ == "__main__":
    main()

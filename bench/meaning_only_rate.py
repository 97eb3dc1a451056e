"""How often a hybrid answer says no note holds the query's words (`by_meaning_only`, MCP's
`caveat`), and whether those queries had an answer in their top 10 anyway (a caveat on a query
the vector channel answered would mislead).

Run: .venv/bin/python bench/meaning_only_rate.py DATA_DIR QUERY_DIR [QUERY_DIR ...] [--query "kiwi" ...]

DATA_DIR: the data dir of a running stack (`k0maru up --vault V --data-dir DATA_DIR`, or an eval
workdir's `data`); each QUERY_DIR holds `queries.jsonl` and `qrels.tsv` (BEIR's shape, note paths
as corpus ids: `bench/vault_known_items.py`, `bench/queries/dendron_questions`). `--query` asks
one more query and prints whether it is flagged. Searches through the console's JSON API, as
`k0maru search` does. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import emit

from k0maru_cli._console_api import call_console
from k0maru_cli._state import StackState


def relevant(qrels: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in qrels.open(encoding="utf-8"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 3 and parts[2] != "score" and int(parts[2]) > 0:
            out.setdefault(parts[0], set()).add(parts[1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("query_dirs", type=Path, nargs="*")
    parser.add_argument("--query", action="append", default=[], help="one more query to ask")
    args = parser.parse_args()
    state = StackState.load(args.data_dir)
    if state is None:
        raise SystemExit(f"no stack is running with the data dir {args.data_dir}")

    def ask(text: str) -> dict[str, object]:
        return call_console(state, "GET", "/api/search", {"q": text, "limit": 10, "mode": "hybrid"})

    for folder in args.query_dirs:
        queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
        wanted = relevant(folder / "qrels.tsv")
        flagged, answered, examples = 0, 0, []
        for item in queries:
            answer = ask(item["text"])
            if answer.get("by_meaning_only"):
                flagged += 1
                found = wanted.get(str(item["_id"]), set()) & {h["path"] for h in answer["hits"]}  # type: ignore[union-attr]
                answered += bool(found)
                examples.append(item["text"][:60])
        emit(
            "meaning_only_rate",
            queries=folder.name,
            asked=len(queries),
            flagged=flagged,
            flagged_with_an_answer_in_top10=answered,
            examples=examples[:5],
        )
    for text in args.query:
        answer = ask(text)
        emit("meaning_only", query=text, flagged=bool(answer.get("by_meaning_only")))


if __name__ == "__main__":
    main()

"""`k0maru`: the launcher and thin clients for a vault's stack.

k0maru up      --vault DIR [--embedders N] [--port P]   start the stack, print the console URL
k0maru ui      --vault DIR [--open]                      the console of the vault's stack (started if needed)
k0maru mcp     --vault DIR                               MCP over stdio (uses or starts a stack)
k0maru status  --vault DIR [--json]                      exit 0 only if every service is SERVING
k0maru search  QUERY --vault DIR [--mode M] [--explain]  print hits
k0maru scan    --vault DIR                               one scan; last line is JSON stats
k0maru offload [--vault DIR] [--task-id ID] -- CMD       run CMD, offload long output
k0maru inspect NODE_ID [--vault DIR] [--lines A:B] [--grep RE] [--around-error]

`search` and `scan` call the running stack's console (JSON over HTTP, standard library only);
the other commands speak gRPC. Everything heavier than the standard library is imported inside
the command that needs it: `k0maru search` is a whole process per call.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from k0maru_common import (
    MODEL_CHOICES,
    OFFLOAD_THRESHOLD_LINES,
    SEARCH_MODE_NAMES,
    K0Error,
    as_folder,
    decode_text,
    stop_signals,
)

from ._state import StackState, pid_alive, pointed_to, resolve_data_dir

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a whole-process CLI path); mypy knows the name
if TYPE_CHECKING:
    from typing import Any

    from ._stack import Launcher


class Terminated(Exception):
    pass


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP (the terminal closed; unless ignored, as under `nohup`) stop the stack
    like Ctrl+C: the services stop gracefully and stack.json goes (SIGHUP used to kill every
    process where it stood)."""
    for sig in stop_signals():
        if sig != signal.SIGINT:  # KeyboardInterrupt already
            signal.signal(sig, _on_sigterm)


def _ignore_stop_signals() -> None:
    for sig in stop_signals():
        signal.signal(sig, signal.SIG_IGN)


def _stop_undisturbed(launcher: Launcher) -> None:
    """Stop the stack; a second SIGTERM or Ctrl+C (an agent host closing us) must not cut the stop
    short, or children and stack.json would be left behind."""
    _ignore_stop_signals()
    launcher.stop()


def _check_start(args: argparse.Namespace) -> None:
    """Refuse, before anything starts, what a started stack would fail on after a minute of
    retries: a model no embedder has (it was kept for the vault, so every later `up` failed too),
    a console on a network address without a token (a gateway traceback, after the whole stack)."""
    from k0maru_common import env_token, is_loopback_host

    model = args.model or os.environ.get("K0_MODEL", "")
    if model and model not in MODEL_CHOICES:
        raise SystemExit(f"k0maru: unknown embedding model {model!r}; known: {', '.join(MODEL_CHOICES)}")
    if not is_loopback_host(args.host) and not env_token("K0_CONSOLE_TOKEN"):
        raise SystemExit(f"k0maru: --host {args.host} is not loopback: set K0_CONSOLE_TOKEN, the console's token")


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is no port (0-65535)")
    return port


def _count(text: str) -> int:
    count = int(text)
    if count < 0:
        raise argparse.ArgumentTypeError(f"{count} is below 0")
    return count


def _vault(args: argparse.Namespace) -> Path:
    vault = Path(args.vault or os.environ.get("K0_VAULT") or ".").expanduser().resolve()
    if not vault.is_dir():
        raise SystemExit(f"k0maru: vault {vault} is not a folder")
    return vault


def _running(args: argparse.Namespace) -> tuple[Path, StackState | None]:
    """The vault and its running stack, if one runs. A stack running for the vault's path as typed
    (made absolute) is found without asking the vault's file system: on a network share that
    stops answering, resolving the path waits as long, and `k0maru status` could not say so."""
    typed = Path(os.path.abspath(Path(args.vault or os.environ.get("K0_VAULT") or ".").expanduser()))
    state = StackState.load(resolve_data_dir(typed, args.data_dir, resolve_vault=False))
    if state is not None and state.vault == str(typed):
        return typed, state
    vault = _vault(args)
    return vault, _stack_of(vault, args)


def _stack_of(vault: Path, args: argparse.Namespace) -> StackState | None:
    """The stack running for `vault` (resolved): in the data dir asked for, else in the one
    `up --data-dir D` pointed to from the default data dir (found without D)."""
    state = StackState.load(resolve_data_dir(vault, args.data_dir))
    if state is None and args.data_dir is None and not os.environ.get("K0_DATA_DIR"):
        elsewhere = pointed_to(vault)
        state = StackState.load(elsewhere) if elsewhere is not None else None
        state = state if state is not None and state.vault == str(vault) else None
    return state


def _require_stack(args: argparse.Namespace) -> StackState:
    vault, state = _running(args)
    if state is None:
        raise SystemExit(f"k0maru: no stack is running for {vault}; start one with: k0maru up --vault {vault}")
    return state


def _launcher(args: argparse.Namespace, vault: Path, http_port: int) -> Launcher:
    from ._stack import Launcher

    return Launcher(
        vault,
        resolve_data_dir(vault, args.data_dir),
        embedders=args.embedders,
        model=args.model,
        http_host=args.host,
        http_port=http_port,
    )


def cmd_up(args: argparse.Namespace) -> int:
    from ._stack import DataDirLost, StartupError, console_port

    vault = _vault(args)
    _check_start(args)
    try:
        port = console_port(args.host, args.port)
    except StartupError as exc:
        print(f"k0maru: {exc}", file=sys.stderr)
        return 1
    launcher = _launcher(args, vault, port)
    launcher.on_progress = lambda step: print(f"k0maru: {step}", flush=True)  # a big vault's first build
    launcher.on_reachable = lambda state: print(
        f"k0maru: while the retriever builds its index, searches answer from the notes indexed so far"
        f" (the console at {state.console_url})",
        flush=True,
    )
    _stop_on_signals()
    started = time.perf_counter()
    try:
        state = launcher.start()
        print(
            f"k0maru: {vault} is served by {len(state.pids)} processes, all healthy in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        if launcher.model_choice:
            print(f"k0maru: embedding model {launcher.model_choice.model} ({launcher.model_choice.reason})", flush=True)
        print(f"k0maru: console {state.console_url}", flush=True)
        if getattr(args, "open", False):
            open_console(state.console_url)
        print(f"k0maru: logs in {launcher.data_dir / 'logs'}; Ctrl+C stops everything", flush=True)
        while True:  # a child that cannot restart is logged by `supervise` and tried again later
            for name in launcher.supervise():
                print(
                    f"k0maru: {name} exited and was restarted (logs: {launcher.data_dir / 'logs' / name}.log)",
                    file=sys.stderr,
                )
            time.sleep(0.5)
    except StartupError as exc:
        print(f"k0maru: start-up failed: {exc}", file=sys.stderr)
        return 1
    except DataDirLost as exc:  # it could no longer be found, stopped, or trusted to keep what it writes
        print(f"k0maru: {exc}; stopping (`k0maru up` indexes the vault again)", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated):
        print("k0maru: stopping", file=sys.stderr)
        return 0
    finally:
        _stop_undisturbed(launcher)


def open_console(url: str) -> None:
    """Open the console in the user's browser ($BROWSER honoured); the token, if any, goes in the URL once."""
    import webbrowser

    from k0maru_common import env_token

    token = env_token("K0_CONSOLE_TOKEN")
    if token:
        from urllib.parse import quote

        url = f"{url}?token={quote(token, safe='')}"  # the page moves it to session storage and drops it
    if not webbrowser.open(url):
        print(f"k0maru: no browser found; open {url}", file=sys.stderr)


def cmd_ui(args: argparse.Namespace) -> int:
    """`k0maru ui [--open]`: the running stack's console, or start one (like `up`) and serve it."""
    _vault_path, state = _running(args)
    if state is None:
        return cmd_up(args)
    print(f"k0maru: console {state.console_url}", flush=True)
    if args.open:
        open_console(state.console_url)
    return 0


REMOTE_ADDRESSES = {"scanner": "K0_SCANNER_ADDR", "retriever": "K0_RETRIEVER_ADDR", "offload": "K0_OFFLOAD_ADDR"}


def _remote_stack(args: argparse.Namespace) -> StackState | None:
    """The services of a team deployment named by K0_SCANNER_ADDR, K0_RETRIEVER_ADDR and
    K0_OFFLOAD_ADDR (with K0_GRPC_TOKEN), or None when they are not all set. The vault is the one
    those services serve (`--vault` or K0_VAULT names it in answers; it need not exist here).
    Some of them set and not all: refused, naming those missing (an agent searched a local stack
    started on `--vault`, not the team's memory, without a word)."""
    from k0maru_common import env_token

    addresses = {name: os.environ.get(var, "") for name, var in REMOTE_ADDRESSES.items()}
    if not all(addresses.values()):
        if any(addresses.values()):
            missing = [var for name, var in REMOTE_ADDRESSES.items() if not addresses[name]]
            set_ = [var for name, var in REMOTE_ADDRESSES.items() if addresses[name]]
            raise SystemExit(
                f"k0maru: {', '.join(set_)} set but not {', '.join(missing)}: a team deployment needs all three "
                "(unset them all to run a local stack)"
            )
        return None
    vault = args.vault or os.environ.get("K0_VAULT") or "(team vault)"
    return StackState(vault, "", 0, addresses, "", grpc_token=env_token("K0_GRPC_TOKEN"))


def cmd_mcp(args: argparse.Namespace) -> int:
    from k0maru_common import configure_logging
    from k0maru_gateway import serve_mcp_stdio

    from ._mcp_stack import DeferredStackClient, StackThread

    configure_logging("mcp", "WARNING")
    remote = _remote_stack(args)
    if remote is not None:  # a team deployment: attach to its services, start nothing
        vault_name = remote.vault
        stack = StackThread(lambda: remote, lambda: _launcher(args, Path(remote.vault), 0))
    else:
        vault, running = _running(args)  # a running stack is found without asking the vault's file system
        if running is None:
            _check_start(args)
        vault_name = str(vault)
        data_dir = Path(running.data_dir) if running is not None else resolve_data_dir(vault, args.data_dir)
        stack = StackThread(lambda: StackState.load(data_dir), lambda: _launcher(args, vault, 0))
    _stop_on_signals()
    stack.start()  # MCP answers initialize and tools/list while the stack comes up
    try:
        serve_mcp_stdio(DeferredStackClient(vault_name, stack, args.tool_wait))
    except (KeyboardInterrupt, Terminated):
        pass
    finally:
        _ignore_stop_signals()  # a second signal must not cut the stop short
        stack.stop()
    return 0


def _embedder_report(state: StackState, services: dict[str, str]) -> list[dict[str, object]]:
    import grpc

    from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
    from k0maru_common import open_channel

    report: list[dict[str, object]] = []
    for name, addr in sorted(state.addresses.items()):
        if not name.startswith("embedder"):
            continue
        entry: dict[str, object] = {
            "name": name,
            "pid": state.pids.get(name, 0),
            "state": services.get(name, "UNKNOWN"),
            "processed": 0,
            "chunks_per_s": 0.0,
        }
        with open_channel(addr, state.grpc_token) as channel:
            try:
                info = embedder_pb2_grpc.EmbedderStub(channel).Info(embedder_pb2.EmbedderInfoRequest(), timeout=2.0)
                entry.update(
                    pid=info.pid,
                    processed=info.processed,
                    chunks_per_s=round(info.chunks_per_s, 2),
                    reported=info.state,
                )
            except grpc.RpcError:
                pass
        report.append(entry)
    return report


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the vault's running stack as Ctrl+C in its terminal would: SIGTERM to its launcher
    (`k0maru up`, `ui`, or an agent's `k0maru mcp`), which stops every service and removes
    stack.json; waits for it to be gone."""
    vault, state = _running(args)
    if state is None:  # StackState.load checks the launcher lives and is the one that wrote it
        print(f"no stack is running for {vault}")
        return 0
    pid = state.launcher_pid
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        print(f"k0maru: the stack for {vault} was started by another user (launcher pid {pid})", file=sys.stderr)
        return 1
    deadline = time.monotonic() + args.timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        print(
            f"k0maru: the stack for {vault} is still stopping after {args.timeout:g} s (launcher pid {pid})",
            file=sys.stderr,
        )
        return 1
    print(f"stopped the stack for {vault} (launcher pid {pid})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from k0maru.v1 import retriever_pb2, scanner_pb2

    remote = _remote_stack(args)  # a team deployment's services (K0_SCANNER_ADDR, …), as `k0maru mcp` reads them
    vault, state = (Path(remote.vault), remote) if remote is not None else _running(args)
    if state is None:
        if args.json:
            print(json.dumps({"vault": str(vault), "running": False, "services": {}, "addresses": {}}))
        else:
            print(f"no stack is running for {vault}")
        return 1
    services = state.health()
    ok = all(s == "SERVING" for s in services.values())
    client = state.client()
    index: dict[str, int] = {}
    build: dict[str, int] | None = None  # the retriever's index build, while one is under way
    queue: dict[str, int | None] = {"pending": None, "dead_letter": None}  # None: the retriever did not say
    workers: list[dict[str, object]] = []  # the job stream's consumers, as the retriever reads them
    problems: list[str] = []  # what the services say about themselves beyond health
    watch = ""  # why the scanner finds changes by polling ("" while the OS tells it)
    excluded: list[str] = []  # what the vault's tool settings leave out (Obsidian's Excluded files, …)
    commit_days = ""  # a vault in git: the commit its notes' days come from, or why git could not be read
    skipped, skipped_files = 0, []  # files not indexed: how many, and the first 50 by path ("path: why")
    with_problems, problem_notes = 0, []  # notes indexed with problems: how many, the first 50 by path
    try:
        reply = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 3.0)
        index = {
            "documents": reply.documents,
            "chunks": reply.chunks,
            "chunks_with_vectors": reply.chunks_with_vectors,
            "last_applied_seq": reply.last_applied_seq,
            "bm25_documents": reply.bm25_documents,
            "vector_points": reply.vector_points,
            "vectors_indexed": reply.vectors_indexed,  # in an HNSW index; the rest brute force
            "index_building": reply.index_building,
            "bm25_deleted": reply.bm25_deleted,  # replaced chunks BM25 still counts until its compaction
        }
        if reply.HasField("build"):
            build = {"notes_indexed": reply.build.notes_indexed, "notes_total": reply.build.notes_total}
        queue = {"pending": reply.embed_queue_pending, "dead_letter": reply.embed_dead_letter}
        workers = [
            {"name": w.name, "pending": w.pending, "idle_ms": w.idle_ms, "gone": w.gone} for w in reply.embedders
        ]
        with_problems = reply.notes_with_problems
        problem_notes = [f"{n.path}: {'; '.join(n.problems)}" for n in reply.problem_notes]
        if reply.problem:
            problems.append(f"retriever: {reply.problem}")
        if reply.params_error:  # only its log said so
            problems.append(f"retriever: rag_params.json rejected, the previous values hold: {reply.params_error}")
    except K0Error as exc:  # its counts are unknown, not -1
        problems.append(f"retriever: {exc}")
    try:
        scanner = client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest(), 3.0)
        problems += [f"scanner: {w.name} {w.state}: {w.last_error}" for w in scanner.workers if w.state != "running"]
        watch = scanner.watch_note
        excluded = list(scanner.excluded)
        commit_days = scanner.commit_days
        skipped, skipped_files = scanner.skipped, [f"{f.path}: {f.reason}" for f in scanner.skipped_files]
        problems += [f"scanner: {scanner.problem}"] if scanner.problem else []
        problems += [f"scanner: notes kept as they were, out of sight: {folder}" for folder in scanner.out_of_sight]
    except K0Error as exc:
        problems.append(f"scanner: {exc}")
    finally:
        client.close()
    embedders = _embedder_report(state, services)
    problems += [f"{e['name']}: {e['reported']}" for e in embedders if e.get("reported", "SERVING") != "SERVING"]
    ok = ok and not problems
    if args.json:
        print(
            json.dumps(
                {
                    "vault": state.vault,
                    "running": True,
                    "services": services,
                    "addresses": {n: a for n, a in state.addresses.items() if n in services},  # gRPC only
                    "redis": state.addresses.get("redis", ""),  # a team deployment's: not known here
                    "console": state.console_url,
                    "embedders": embedders,
                    "queue": queue,
                    "workers": workers,
                    "index": index,
                    "build": build,
                    "problems": problems,
                    "watch_note": watch,
                    "excluded": excluded,
                    "commit_days": commit_days,
                    "skipped": {"count": skipped, "files": skipped_files},
                    "notes_with_problems": {"count": with_problems, "notes": problem_notes},
                }
            )
        )
    else:
        console = state.console_url or "(a team deployment's: not known here)"
        print(f"vault   {state.vault}\nconsole {console}")
        for name, value in services.items():
            print(f"{name:<12} {value:<12} {state.addresses[name]}")
        for e in embedders:
            print(f"{e['name']:<12} pid {e['pid']}: {e['processed']} embedded, {e['chunks_per_s']} chunks/s")
        if queue["pending"] is None:
            print("queue   unknown: the retriever did not say")
        else:
            print(f"queue   {queue['pending']} jobs pending, {queue['dead_letter']} in dead letter")
        for w in workers:
            # a live worker reads the job stream every 0.5 s; silent longer, it is busy with a long
            # batch or killed (its jobs are taken over after K0_CLAIM_IDLE_MS): not called "live"
            silent = isinstance(idle := w["idle_ms"], int) and idle >= WORKER_SILENT_MS
            seen = "gone" if w["gone"] else "silent (busy, or stopped)" if silent else "live"
            print(f"worker  {w['name']}: {seen}, {w['pending']} jobs held, idle {w['idle_ms']} ms")
        if index:
            hnsw = f", {index['vectors_indexed']} in an HNSW index" if index["vectors_indexed"] else ""
            building = ", an HNSW index building in the background" if index["index_building"] else ""
            print(
                f"index   {index['documents']} notes, {index['chunks']} chunks, "
                f"{index['chunks_with_vectors']} with vectors{hnsw}{building}"
            )
            if not any(name.startswith("embedder") for name in services):
                print("vectors none computed: this stack runs no embedder (BM25 only; `k0maru up --embedders 1`)")
            if index["bm25_deleted"]:
                print(
                    f"bm25    {index['bm25_deleted']:,} replaced chunks still counted in its statistics"
                    " (edited notes rank a little lower until the background compaction)"
                )
        if build is not None:
            print(
                f"build   {build['notes_indexed']:,} of {build['notes_total']:,} notes indexed so far"
                " (searches answer from these; the retriever turns SERVING when all are in)"
            )
        if watch:
            print(f"watch   by polling: {watch}")
        for rule in excluded:  # a tool's rule as written, or a line that names its own setting
            print(
                f"exclude {rule}"
                if "K0_" in rule
                else f"exclude {rule}: not indexed (K0_TOOL_EXCLUDES=false indexes it)"
            )
        if commit_days:
            print(f"dates   {commit_days}")
        _print_listed("skipped", f"file{'' if skipped == 1 else 's'} not indexed", skipped, skipped_files)
        _print_listed(
            "notes", f"note{'' if with_problems == 1 else 's'} indexed with problems", with_problems, problem_notes
        )
        for problem in problems:
            print(f"problem {problem}")
    return 0 if ok else 1


LISTED_PRINTED = 10  # skipped files, and notes with problems, that `k0maru status` names


def _print_listed(label: str, what: str, count: int, lines: list[str]) -> None:
    """Files not indexed, or notes indexed with problems, and why: the first LISTED_PRINTED."""
    if not count:
        return
    print(f"{label:<7} {count} {what}:")
    for line in lines[:LISTED_PRINTED]:
        print(f"        {line}")
    if count > LISTED_PRINTED:
        print(f"        … and {count - LISTED_PRINTED} more (`k0maru status --json` names {len(lines)})")


def _team_search(team: StackState, params: dict[str, str | int | list[str]]) -> dict[str, Any]:
    """The console's search answer, computed here over the team deployment's gRPC services (its
    console, if it has one, is published on its own host's loopback only)."""
    from urllib.parse import urlencode

    from starlette.datastructures import QueryParams

    from k0maru_common import K0Error
    from k0maru_gateway import search_answer

    from ._console_api import ConsoleError

    try:
        with team.client() as client:
            return search_answer(client, QueryParams(urlencode(params, doseq=True)))
    except K0Error as exc:
        raise ConsoleError(str(exc)) from exc


def cmd_search(args: argparse.Namespace) -> int:
    from ._console_api import ConsoleError, call_console

    if not args.query.strip() and not (args.tag or args.folder or args.diary or args.since or args.until):
        print(
            "k0maru: say what to look for, or list notes with --folder, --diary, --tag, --since or --until",
            file=sys.stderr,
        )
        return 2
    team = _remote_stack(args)  # a team deployment's services (K0_SCANNER_ADDR, …), as `k0maru mcp` reads them
    state = team or _require_stack(args)
    params: dict[str, str | int | list[str]] = {
        "q": args.query,
        "limit": args.limit,
        "mode": args.mode,
        "explain": int(args.explain),
        "tag": args.tag,
        "prefix": [as_folder(f) for f in args.folder],  # `code` is `code/`, not `code-review/` too
        "diary": args.diary,
        "since": args.since,
        "until": args.until,
    }
    try:
        answer = _team_search(state, params) if team else call_console(state, "GET", "/api/search", params)
    except ConsoleError as exc:
        print(f"k0maru: {exc}", file=sys.stderr)
        return 1
    reported = [c for c in answer["channels"] if c["asked"]]  # what the retriever said about each channel
    hits = answer["hits"]
    if args.json:
        channels = [
            {"channel": c["name"], "ran": c["ran"], "reason": c["why"]}
            | ({"weight": c["weight"], "confidence": c["confidence"]} if args.explain and c["ran"] else {})
            for c in reported
        ]
        shown = {"vault": answer["vault"], "channels": channels, "hits": hits}
        print(json.dumps(shown | {"by_meaning_only": bool(answer.get("by_meaning_only"))}, ensure_ascii=False))
        return 0
    for c in reported:
        if not c["ran"]:
            print(f"({c['name']} left out: {c['why']})", file=sys.stderr)
    for note in answer.get("partial", []):
        print(f"({note})", file=sys.stderr)
    weighed = [c for c in reported if c["ran"]]
    if args.explain and len(weighed) > 1:  # how much each channel counted for this query (fusion's weights)
        each = (f"{c['name']} {c['weight']:.2f} (confidence {c['confidence']:.2f})" for c in weighed)
        print(f"(channels weighed: {', '.join(each)})")
    if answer.get("by_meaning_only") and hits:
        print("(no note holds these words: the nearest notes by meaning, which may be about something else)")
    if not hits:
        print(
            f"no notes match {args.query!r} in {answer['vault']}"
            if args.query
            else f"no notes in {answer['vault']} are in that scope"
        )
        for said in answer.get("empty_scope", []):  # a folder, diary or tag no note is in
            print(f"({said})")
    for i, h in enumerate(hits, start=1):
        day = h.get("date") or h.get("committed") or h.get("modified") or ""  # the day a date scope reads
        score = f"  score {h['score']:.4f}" if args.query else ""  # a scope's notes, listed: no score
        print(f"{i:>2}. {h['title']}  [{h['path']}:{h['lines'][0]}]{score}  {day}".rstrip())
        earlier = h.get("same_passage_as")
        same = next((j for j, o in enumerate(hits[: i - 1], start=1) if o["path"] == earlier), 0) if earlier else 0
        print(f"    (the same passage as {same}.)" if same else f"    {h['snippet']}")
        if h.get("problems"):  # a sync tool's conflicting copy, git's conflict markers, a guessed encoding
            print(f"    ⚠ {'; '.join(h['problems'])}")
        if h.get("superseded_by"):  # a later note says it replaces this one
            print(f"    superseded by {', '.join(h['superseded_by'])}")
        if args.explain:
            e = h["explain"]
            b = f"bm25 #{e['bm25']['rank']} ({e['bm25']['score']:.2f})" if e["bm25"] else "bm25 -"
            v = f"vector #{e['vector']['rank']} ({e['vector']['score']:.3f})" if e["vector"] else "vector -"
            v += " (not embedded yet)" if e.get("not_embedded") else ""
            name = f"  name {e['name_match']:.0%}" if e.get("name_match") else ""
            first = {
                "name": "  first: the query is its name",
                "line": "  first: it holds the query word for word",
                "symbol": "  first: no other note holds the query's code or identifier",
                "replaces": "  first: it replaces a note found",
            }
            print(f"    {b}  {v}  graph +{e['graph_boost']:.4f}{name}{first.get(e.get('exact') or '', '')}")
    return 0


WORKER_SILENT_MS = 5000  # `status`: an embedder worker this long without reading jobs is no longer said live
SCAN_FIELDS = ("added", "modified", "deleted", "renamed", "unchanged", "skipped")


def cmd_scan(args: argparse.Namespace) -> int:
    team = _remote_stack(args)
    vault, state = (Path(team.vault), None) if team is not None else _running(args)
    if team is not None:  # the team deployment's scanner (its token allows a scan)
        from k0maru.v1 import scanner_pb2
        from k0maru_common import K0Error

        try:
            with team.client() as client:
                stats = client.call(client.scanner.Scan, scanner_pb2.ScanRequest(force_full=args.full), 660.0)
        except K0Error as exc:
            print(f"k0maru: {exc}", file=sys.stderr)
            return 1
        counts, ms = {f: getattr(stats, f) for f in SCAN_FIELDS}, stats.ms
    elif state is not None:  # the stack's scanner, through its console
        from ._console_api import ConsoleError, call_console

        try:
            answer = call_console(state, "POST", "/api/scan", body={"full": args.full}, timeout=660.0)
        except ConsoleError as exc:
            print(f"k0maru: {exc}", file=sys.stderr)
            return 1
        counts, ms = {f: answer[f] for f in SCAN_FIELDS}, float(answer["ms"])
    else:  # no stack: the scanner's library scans against its manifest directly
        from k0maru_scanner import ScannerSettings, scan_once

        settings = ScannerSettings(vault=vault, data_dir=resolve_data_dir(vault, args.data_dir), watch=False)
        stats = scan_once(settings, force_full=args.full)
        counts, ms = {f: getattr(stats, f) for f in SCAN_FIELDS}, stats.ms
    print(json.dumps({**counts, "ms": round(ms, 3)}))
    return 0


def _find_vault(args: argparse.Namespace) -> Path:
    if args.vault or os.environ.get("K0_VAULT"):
        return _vault(args)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / ".k0maru").is_dir() or (folder / ".obsidian").is_dir():
            return folder
    return here


def _env_lines(name: str) -> int:
    """A positive line count from the environment (0 when unset or not one)."""
    try:
        return max(0, int(os.environ.get(name, "") or 0))
    except ValueError:
        return 0


def cmd_offload(args: argparse.Namespace) -> int:
    import subprocess

    from k0maru.v1 import offload_pb2

    vault = _find_vault(args)
    # the `--` that ends k0maru's own flags; the command's own (`cargo test -- --nocapture`) are kept
    command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)
    exit_code: int | None = None
    threshold = args.threshold or _env_lines("K0_THRESHOLD_LINES") or OFFLOAD_THRESHOLD_LINES
    buffered: list[bytes] = []  # a command's output lines, or stdin's chunks
    # Ctrl+C: the command (or the pipe's writer) has the same SIGINT and ends; what was captured,
    # the error in it, is offloaded all the same (a KeyboardInterrupt lost everything past line 50).
    # A second one terminates a command that goes on, a third kills it.
    interrupts: list[int] = []
    running: list[subprocess.Popen[bytes]] = []

    def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
        interrupts.append(1)
        if running and len(interrupts) >= 2:
            (running[0].terminate if len(interrupts) == 2 else running[0].kill)()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        if command:
            try:
                proc = subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            except OSError as exc:  # as a shell says it: 127 not found, 126 not runnable
                print(f"k0maru: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
                return 127 if isinstance(exc, FileNotFoundError) else 126
            running.append(proc)
            assert proc.stdout is not None
            out = sys.stdout.buffer
            for raw in proc.stdout:  # stream while under the threshold, then capture silently
                buffered.append(raw)
                if len(buffered) <= threshold:
                    out.write(raw)
                    out.flush()
                elif len(buffered) == threshold + 1:
                    out.write(f"[k0maru] over {threshold} lines: capturing the rest\n".encode())
                    out.flush()
            code = proc.wait()
            exit_code = 128 - code if code < 0 else code  # as a shell says it (SIGKILL was `exit 247`)
            streamed = True
        else:
            streamed = False
            while chunk := os.read(sys.stdin.fileno(), 1 << 16):
                buffered.append(chunk)
    finally:
        signal.signal(signal.SIGINT, previous)
    text = decode_text(b"".join(buffered), "replace")
    interrupted = bool(interrupts)
    if interrupted:
        print("\n[k0maru] interrupted: offloading what was captured", file=sys.stderr)
    # the stack's offload service records the command, its exit and the tokens saved in the ledger
    # the console and the scoreboard read (a local engine left "(piped)", "exit ?", no tokens)
    state = _remote_stack(args) or _stack_of(vault, args)
    request = offload_pb2.OffloadLogRequest(
        text=text,
        task_id=args.task_id,
        threshold=threshold,
        command=" ".join(command),
        streamed_lines=threshold if streamed else 0,  # the ledger counts what the terminal already showed
    )
    if exit_code is not None:
        request.exit_code = exit_code
    try:
        if state is not None:
            client = state.client()
            try:
                reply = client.call(client.offload.OffloadLog, request, 60.0)
            finally:
                client.close()
            offloaded, summary, diagram, node_id = reply.offloaded, reply.summary, reply.mermaid, reply.node_id
        else:
            from k0maru_offload import OffloadEngine

            result = OffloadEngine(vault, threshold).offload(
                text, args.task_id, threshold, " ".join(command), exit_code
            )
            offloaded, summary, diagram, node_id = result.offloaded, result.summary, result.mermaid, result.node_id
    except K0Error as exc:  # the output is never lost: what the terminal has not shown is printed
        sys.stdout.flush()
        sys.stdout.buffer.write(b"".join(buffered[threshold:]) if streamed else text.encode("utf-8", "replace"))
        sys.stdout.flush()
        print(f"k0maru: not offloaded ({exc}); the output is printed in full instead", file=sys.stderr)
        return 130 if interrupted else 2 if exit_code is None else exit_code
    if offloaded:
        from k0maru_offload import next_step

        print(summary)
        print(next_step(node_id, tool=False))
        print(f"\n```mermaid\n{diagram}\n```")
    elif not streamed:
        sys.stdout.write(text)
    return 130 if interrupted else exit_code or 0


def cmd_inspect(args: argparse.Namespace) -> int:
    vault = _find_vault(args)
    start = end = 0
    if args.lines:
        a, _, b = args.lines.partition(":")
        try:
            start, end = int(a or 0), int(b or 0)
        except ValueError:
            raise SystemExit("k0maru: --lines takes A:B") from None
    try:
        from k0maru_offload import OffloadEngine

        lines, total = OffloadEngine(vault).inspect(
            args.node_id, start, end, args.grep, args.context, args.around_error
        )
    except K0Error as exc:
        print(f"k0maru: {exc}", file=sys.stderr)
        return 2
    for number, text in lines:
        print(f"{number:>6}  {text}")
    print(f"({len(lines)} of {total} lines)", file=sys.stderr)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from k0maru_common import default_data_root

    from ._eval import EvalInputError, run_beir, run_vault

    dataset = Path(args.dataset).expanduser().resolve()
    if args.tagmemo is not None and not 0.0 <= args.tagmemo <= 1.0:
        raise SystemExit("k0maru: --tagmemo WEIGHT must be between 0 and 1")
    if args.kind == "vault":
        if not dataset.is_dir():
            raise SystemExit(f"k0maru: {dataset} is not a folder")
        if args.queries is None or args.qrels is None:
            raise SystemExit("k0maru: eval vault needs --queries Q.jsonl and --qrels R.tsv")
        workdir = (args.workdir or default_data_root() / "eval" / f"vault-{dataset.name}").resolve()
        try:
            report = run_vault(
                dataset,
                args.queries,
                args.qrels,
                workdir,
                args.mode,
                args.embedders,
                args.model,
                tagmemo=args.tagmemo,
                dedup=args.dedup,
            )
        except EvalInputError as exc:
            raise SystemExit(f"k0maru: {exc}") from exc
        print(json.dumps(report))
        return 0
    if not (dataset / "corpus.jsonl").is_file() or not (dataset / "qrels" / f"{args.split}.tsv").is_file():
        raise SystemExit(f"k0maru: {dataset} is not a BEIR dataset with a {args.split} split")
    workdir = (args.workdir or default_data_root() / "eval" / dataset.name).resolve()
    report = run_beir(
        dataset, workdir, args.mode, args.split, args.embedders, args.model, tagmemo=args.tagmemo, dedup=args.dedup
    )
    print(json.dumps(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="k0maru", description="Long-term memory for AI coding agents over a Markdown vault."
    )
    sub = parser.add_subparsers(dest="command_name", required=True)

    def with_vault(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--vault", help="the Markdown vault (default: $K0_VAULT or the current folder)")
        p.add_argument("--data-dir", type=Path, help="index state (default: $XDG_DATA_HOME/k0maru/<vault-id>)")
        return p

    for name, helptext in (
        ("up", "start the stack and the console"),
        ("mcp", "serve MCP over stdio"),
        ("ui", "the console of the vault's running stack (starting one if needed)"),
    ):
        p = with_vault(sub.add_parser(name, help=helptext))
        p.add_argument("--embedders", type=_count, default=1, help="embedder workers to run")
        p.add_argument(
            "--model",
            default="",
            choices=MODEL_CHOICES,
            help="embedding model preset: minilm-l6-int8, minilm-l6-q8 (faster, int8 arithmetic), use-multilingual (default: chosen from the vault's script mix at the first start, then kept)",
        )
        p.add_argument("--host", default="127.0.0.1", help="console bind address (non-loopback needs K0_CONSOLE_TOKEN)")
        if name in ("up", "ui"):
            p.add_argument(
                "--port",
                type=_port,
                help="console port (default: 7878, or the next free one if taken; 0: any free port)",
            )
        else:
            p.add_argument(
                "--tool-wait",
                type=float,
                default=30.0,
                help="seconds a tool call waits for a stack that is still starting (default 30)",
            )
        if name == "ui":
            p.add_argument("--open", action="store_true", help="open the console in the default browser")
    p = with_vault(sub.add_parser("stop", help="stop the vault's running stack (as Ctrl+C in its terminal)"))
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for it to stop (default 60)")
    p = with_vault(sub.add_parser("status", help="health of every service of the vault's stack"))
    p.add_argument("--json", action="store_true")
    p = with_vault(sub.add_parser("search", help="search the vault"))
    p.add_argument(
        "query", nargs="?", default="", help="what to look for; left out with a scope: its notes, newest first"
    )
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--mode", choices=sorted(SEARCH_MODE_NAMES), default="hybrid")
    p.add_argument("--explain", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--tag",
        action="append",
        default=[],
        help="only notes with this tag (repeat: all of them); any case, # or not; takes nested tags (a/b for a)",
    )
    p.add_argument("--folder", action="append", default=[], help="only notes under this folder (repeat: any of them)")
    p.add_argument(
        "--diary", action="append", default=[], help="only notes of this diary (first-level folder, or Root)"
    )
    p.add_argument("--since", default="", help="only notes dated this day or later (YYYY-MM-DD, or today, 7d, 2w)")
    p.add_argument("--until", default="", help="only notes dated this day or earlier (YYYY-MM-DD, or yesterday, 7d)")
    p = with_vault(sub.add_parser("scan", help="scan the vault once"))
    p.add_argument("--full", action="store_true", help="re-read and re-hash every file")
    p = with_vault(sub.add_parser("offload", help="run a command (or read stdin) and offload long output"))
    p.add_argument("--task-id", default="")
    p.add_argument(
        "--threshold", type=_count, default=0, help="lines shown before the rest is captured (K0_THRESHOLD_LINES, 50)"
    )
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = with_vault(sub.add_parser("inspect", help="print slices of an offloaded log"))
    p.add_argument("node_id")
    p.add_argument("--lines", default="", help="A:B, 1-based and inclusive")
    p.add_argument("--grep", default="")
    p.add_argument("--context", type=int, default=0)
    p.add_argument("--around-error", action="store_true")
    p = sub.add_parser("eval", help="evaluate retrieval on a BEIR dataset or your own vault through the real services")
    p.add_argument("kind", choices=["beir", "vault"])
    p.add_argument(
        "dataset", help="beir: folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv; vault: the vault"
    )
    p.add_argument("--queries", type=Path, help="vault: JSONL of {_id, text}")
    p.add_argument(
        "--qrels",
        type=Path,
        help="vault: TSV of query id, vault-relative note path, grade (-1: leave that note out of the query's ranking)",
    )
    p.add_argument("--mode", choices=sorted(SEARCH_MODE_NAMES), default="hybrid")
    p.add_argument("--split", default="test")
    p.add_argument("--embedders", type=_count, default=2)
    p.add_argument(
        "--model",
        default="",
        choices=MODEL_CHOICES,
        help="embedding model preset (default: chosen from the vault's script mix at the first start, then kept)",
    )
    p.add_argument("--workdir", type=Path, help="where the dataset's vault and index go (reused across runs)")
    p.add_argument(
        "--tagmemo",
        type=float,
        nargs="?",
        const=0.0,
        metavar="WEIGHT",
        help="search with TagMemo on; WEIGHT is the base tag weight (omitted: the configured default)",
    )
    p.add_argument("--dedup", action="store_true", help="SVD-residual deduplication of the results")
    return parser


COMMANDS = {
    "up": cmd_up,
    "ui": cmd_ui,
    "mcp": cmd_mcp,
    "status": cmd_status,
    "stop": cmd_stop,
    "search": cmd_search,
    "scan": cmd_scan,
    "offload": cmd_offload,
    "inspect": cmd_inspect,
    "eval": cmd_eval,
}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line's arguments; a search for text that starts with `-` (`-XX:MaxRAMPercentage=75`,
    `--bigkeys` pasted from a log) is told to put `--` before it, not only that it is unrecognized."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        hint = ""
        if args.command_name == "search" and not args.query and extra[0].startswith("-"):
            hint = f" (to search for text that starts with '-', put -- before it: k0maru search -- {shlex.quote(extra[0])})"
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    try:
        code = COMMANDS[args.command_name](args)
    except BrokenPipeError:
        # the reader went away (`k0maru search … | head`): nothing more to tell it, and no
        # traceback; Python's last flush of stdout goes to /dev/null instead of failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + signal.SIGPIPE  # what a shell reports for a program stopped by SIGPIPE
    sys.exit(code)

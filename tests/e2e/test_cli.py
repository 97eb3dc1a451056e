"""The CLI as a user types it: offload keeps exit codes, pipes work, scan prints JSON, console answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from k0maru_cli import Launcher
from k0maru_cli._console_api import call_console
from k0maru_cli._state import StackState, pid_alive
from tests.conftest import wait_for, write_notes

pytestmark = pytest.mark.e2e
K0MARU = str(Path(sys.executable).parent / "k0maru")
LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "python_traceback.log"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([K0MARU, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_offload_command_keeps_exit_code_and_summarises(vault: Path):
    script = "import sys\nfor i in range(200): print(f'line {i} of output from the build')\nprint('Traceback (most recent call last):')\nprint('  File \"build.py\", line 7, in <module>')\nprint('ValueError: bad config')\nsys.exit(3)\n"
    out = run("offload", "--vault", str(vault), "--task-id", "build", "--", sys.executable, "-c", script)
    assert out.returncode == 3
    assert "ValueError: bad config" in out.stdout and "build.py:7" in out.stdout and "```mermaid" in out.stdout
    assert (
        out.stdout.startswith("line 0 of output") and "[k0maru] over 50 lines" in out.stdout
    )  # streamed, then captured
    assert "line 120 of output" not in out.stdout
    node = next(w for w in out.stdout.split() if w.startswith("node_"))
    shown = run("inspect", node.rstrip("."), "--vault", str(vault), "--lines", "1:3")
    assert shown.returncode == 0 and shown.stdout.splitlines()[0].strip().startswith("1")
    short = run("offload", "--vault", str(vault), "--", sys.executable, "-c", "print('hello'); raise SystemExit(0)")
    assert short.returncode == 0 and short.stdout == "hello\n"


def test_ctrl_c_during_an_offload_keeps_what_was_captured(vault: Path):
    """Ctrl+C on a hung test run: a KeyboardInterrupt lost every line past the 50 shown, the error
    with them. What was captured is offloaded now, and the exit status is the shell's 130. A killed
    command exits 128 + its signal, and one that does not exist 127, as a shell says them."""
    import signal

    script = "for i in $(seq 1 300); do echo line $i; done; echo 'error: the failure you need'; sleep 60"
    for mode in ("run", "piped"):
        argv = [K0MARU, "offload", "--vault", str(vault), "--task-id", mode]
        cmd = [*argv, "--", "bash", "-c", script] if mode == "run" else ["bash", "-c", f"({script}) | {' '.join(argv)}"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(2.0)  # the 301 lines are captured; the command hangs
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal's Ctrl+C does
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (mode, err)
        assert b"error: the failure you need" in out and b"interrupted: offloading what was captured" in err
        (log,) = (vault / ".k0maru" / "refs").glob(f"{mode}_node_*.log")
        assert "line 300" in log.read_text()
    killed = run("offload", "--vault", str(vault), "--", "bash", "-c", "kill -KILL $$")
    assert killed.returncode == 137
    missing = run("offload", "--vault", str(vault), "--", "./no-such-script.sh")
    assert missing.returncode == 127 and "cannot run ./no-such-script.sh" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_command_that_writes_gbk_is_offloaded_as_chinese(vault: Path):
    """A tool on a Chinese-locale machine (a JVM, a Windows build run under wine) writes GBK: its
    output was kept as UTF-8 with U+FFFD for every character, the error among them."""
    script = (
        "import sys\nout = sys.stdout.buffer\n"
        "for i in range(200): out.write(f'第 {i} 步：编译模块\\n'.encode('gbk'))\n"
        "out.write('错误：配置文件无效\\n'.encode('gbk'))\nsys.exit(1)\n"
    )
    cmd = [K0MARU, "offload", "--vault", str(vault), "--task-id", "gbk-build", "--", sys.executable, "-c", script]
    out = subprocess.run(cmd, capture_output=True, timeout=120)
    assert out.returncode == 1
    streamed, summary = out.stdout.split(b"[k0maru]", 1)  # the first lines as written, then the summary
    assert streamed.startswith("第 0 步".encode("gbk"))
    stored = next((vault / ".k0maru" / "refs").glob("gbk-build_node_*.log")).read_text(encoding="utf-8")
    assert "[offloaded] 201 lines" in summary.decode() and "错误：配置文件无效" in stored and "\ufffd" not in stored


def test_piped_offload_and_refused_ids(vault: Path):
    out = run("offload", "--vault", str(vault), stdin=LOG.read_text())
    assert out.returncode == 0 and "KeyError: 'token'" in out.stdout
    bad = run("inspect", "../../etc/passwd", "--vault", str(vault))
    assert bad.returncode == 2 and "invalid node id" in bad.stderr


def test_offload_keeps_the_commands_own_double_dash_and_the_threshold_set(vault: Path):
    """Every `--` was dropped from the command (`cargo test -- --nocapture` ran as `cargo test
    --nocapture`), and K0_THRESHOLD_LINES, which the README names, did not reach the command line."""
    out = run("offload", "--vault", str(vault), "--", "printf", "%s\\n", "a", "--", "b")
    assert out.returncode == 0 and out.stdout == "a\n--\nb\n"
    lines = subprocess.run(
        [K0MARU, "offload", "--vault", str(vault), "--", "seq", "1", "60"],
        env={**os.environ, "K0_THRESHOLD_LINES": "100"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lines.returncode == 0 and lines.stdout.split() == [str(i) for i in range(1, 61)]  # under 100: as it is


def test_scan_prints_json_stats_last(vault: Path, tmp_path: Path):
    write_notes(vault, {"a.md": "# A", "b/c.md": "# C", "bin.md": "x\x00y"})
    out = run("scan", "--vault", str(vault), "--data-dir", str(tmp_path / "d"))
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert (
        stats["added"] == 2
        and stats["skipped"] == 1
        and set(stats) == {"added", "modified", "deleted", "renamed", "unchanged", "skipped", "ms"}
    )
    again = json.loads(
        run("scan", "--vault", str(vault), "--data-dir", str(tmp_path / "d")).stdout.strip().splitlines()[-1]
    )
    assert again["unchanged"] == 2 and again["added"] == 0


def test_console_health_search_and_errors(vault: Path, tmp_path: Path):
    write_notes(vault, {"a.md": "# Lighthouse\n\nThe lighthouse keeper logs every storm.\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0)
    state = launcher.start()
    try:
        base = state.console_url.rstrip("/")
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as r:
            assert json.loads(r.read())["status"] == "ok"
        with urllib.request.urlopen(f"{base}/api/search?q=lighthouse%20storm&mode=bm25", timeout=10) as r:
            data = json.loads(r.read())
        assert data["hits"][0]["path"] == "a.md" and data["hits"][0]["explain"]["bm25"]["rank"] == 1
        with urllib.request.urlopen(
            f"{base}/api/search?q=lighthouse&tagmemo=1&tag_weight=0.3&dedup=1", timeout=10
        ) as r:
            data = json.loads(r.read())
        assert data["hits"][0]["path"] == "a.md" and "tagmemo" in data  # no tags: reported as not applied
        for query, code in (
            ("", 400),
            ("q=x&mode=nope", 400),
            ("q=x&limit=0", 400),
            ("q=x&tagmemo=1&tag_weight=2", 400),
            ("q=" + "x" * 10_001, 413),
        ):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"{base}/api/search?{query}", timeout=10)
            assert err.value.code == code
            err.value.close()
        with urllib.request.urlopen(f"{base}/", timeout=10) as r:
            assert "charset=utf-8" in r.headers["content-type"] and b"Search debugger" in r.read()
        with urllib.request.urlopen(f"{base}/api/status", timeout=10) as r:
            assert json.loads(r.read())["index"]["documents"] == 1
        with urllib.request.urlopen(f"{base}/api/events", timeout=30) as stream:  # live changes (SSE)
            assert stream.readline() == b": connected\n"
            opened = [stream.readline() for _ in range(6)]  # the journal as it stands, then its last change
            assert opened[1] == b"event: journal\n" and json.loads(opened[2][6:])["last_seq"] == 1
            assert json.loads(opened[4][6:])["path"] == "a.md"
            time.sleep(0.3)  # let the subscription reach the scanner's publisher
            (vault / "fresh.md").write_text("# Fresh\n")
            lines = [stream.readline() for _ in range(3)]
        event = json.loads(next(ln for ln in lines if ln.startswith(b"data: "))[6:])
        assert event["path"] == "fresh.md" and event["kind"] == "added" and event["seq"] == 2
    finally:
        launcher.stop()


def test_search_and_scan_through_a_running_stacks_console(vault: Path, tmp_path: Path):
    """`k0maru search` / `scan` with a stack up call its console (JSON over HTTP, no gRPC in the
    CLI), with the token the console was started with, read from stack.json."""
    write_notes(
        vault,
        {
            "ops/lighthouse.md": "# Lighthouse\n\nThe lighthouse keeper logs every storm.\n",
            "misc/drain.md": "# Drain\n\nA storm drain by the road. #roads/drains\n",
            "misc-old/gutter.md": "# Gutter\n\nA storm gutter.\n",  # `--folder misc` is not this folder
        },
    )
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0, extra_env={"K0_CONSOLE_TOKEN": "c t"})
    state = launcher.start()
    where = ("--vault", str(vault), "--data-dir", str(tmp_path / "data"))
    try:
        assert state.console_token == "c t"
        out = run("search", "lighthouse keeper", *where, "--explain")
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].startswith(" 1. Lighthouse  [ops/lighthouse.md:1]  score ")
        assert "lighthouse keeper logs every storm" in lines[1].lower()
        assert lines[2].strip().startswith("bm25 #1 (") and "vector -" in lines[2]
        assert "(vector left out: " in out.stderr  # hybrid asked for vectors; this stack has none
        nothing = run("search", "", *where)  # it named the console's parameters, not the flags
        assert nothing.returncode == 2 and "--folder, --diary, --tag, --since or --until" in nothing.stderr
        bm25 = json.loads(run("search", "storm", *where, "--mode", "bm25", "--json").stdout)
        assert bm25["vault"] == str(vault) and bm25["channels"] == [{"channel": "bm25", "ran": True, "reason": ""}]
        assert {h["path"] for h in bm25["hits"]} == {"ops/lighthouse.md", "misc/drain.md", "misc-old/gutter.md"}
        assert set(bm25["hits"][0]) == {
            "path",
            "title",
            "snippet",
            "score",
            "diary",
            "tags",
            "lines",
            "date",
            "modified",
            "committed",
            "problems",
            "same_passage_as",
            "superseded_by",
        }
        piped = subprocess.Popen([K0MARU, "search", "storm", *where], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert piped.stdout is not None and piped.stderr is not None
        piped.stdout.close()  # `k0maru search … | head` with head gone before the answer came
        assert piped.wait(timeout=120) == 141  # as a shell reports a program stopped by SIGPIPE
        assert "Traceback" not in piped.stderr.read().decode()  # it printed a BrokenPipeError's
        piped.stderr.close()
        for scope in (
            ("--tag", "#Roads"),
            ("--folder", "misc/"),
            ("--folder", "misc"),  # a folder's name as typed: that folder, not every path that starts so
            ("--folder", "/misc/"),
            ("--diary", "misc"),
            ("--folder", "x/", "--folder", "misc/"),
        ):
            scoped = json.loads(run("search", "storm", *where, "--mode", "bm25", "--json", *scope).stdout)
            assert [h["path"] for h in scoped["hits"]] == ["misc/drain.md"], scope
        none = run("search", "zeppelin", *where, "--mode", "bm25")
        assert none.returncode == 0 and none.stdout.startswith("no notes match 'zeppelin'")
        listed = json.loads(run("search", *where, "--folder", "ops/", "--json").stdout)  # no query: a scope's notes
        assert [(h["path"], h["score"]) for h in listed["hits"]] == [("ops/lighthouse.md", 0.0)]
        plain = run("search", *where, "--folder", "ops/").stdout.splitlines()
        assert plain[0].startswith(" 1. Lighthouse  [ops/lighthouse.md:1]  2") and "score" not in plain[0]
        empty = run("search", *where, "--until", "2000-01-01")
        assert empty.returncode == 0 and empty.stdout.startswith("no notes in ") and "in that scope" in empty.stdout
        bad = run("search", "storm", *where, "--limit", "0")  # the console's own check and message
        assert bad.returncode == 1 and "k0maru: limit must be between 1 and 100" in bad.stderr

        (vault / "ops" / "fresh.md").write_text("# Fresh\n\nA zeppelin over the lighthouse.\n")
        stats = json.loads(run("scan", *where).stdout.strip().splitlines()[-1])
        assert stats["added"] == 1 and stats["unchanged"] == 3 and set(stats) == {
            "added", "modified", "deleted", "renamed", "unchanged", "skipped", "ms"
        }  # fmt: skip
        full = json.loads(run("scan", *where, "--full").stdout)
        assert full["modified"] == 4 and full["added"] == 0  # --full re-reads and re-hashes every note
        wait_for(lambda: "fresh.md" in run("search", "zeppelin", *where, "--mode", "bm25").stdout, 30, "the new note")

        base = state.console_url.rstrip("/")
        for headers, code in (
            ({"Content-Type": "application/json"}, 401),  # no token
            ({"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Bearer c t"}, 400),  # a form
            ({"Content-Type": "application/json", "Authorization": "Bearer c t"}, 400),  # full is no boolean
        ):
            request = urllib.request.Request(f"{base}/api/scan", b'{"full": 1}', headers, method="POST")
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(request, timeout=30)
            assert err.value.code == code and "error" in json.loads(err.value.read())
            err.value.close()
    finally:
        launcher.stop()
    gone = run("search", "storm", *where)
    assert gone.returncode == 1 and "no stack is running" in gone.stderr


def test_console_off_loopback_requires_token(vault: Path):
    env = {"K0_VAULT": str(vault), "K0_HTTP_HOST": "0.0.0.0"}
    out = subprocess.run(
        [sys.executable, "-m", "k0maru_gateway"],
        env={**env, "PATH": "/usr/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "K0_CONSOLE_TOKEN" in out.stderr


def test_up_refuses_what_a_started_stack_would_fail_on_before_starting_it(vault: Path, tmp_path: Path):
    """A mistyped model started every service, retried the embedder for a minute and was kept for
    the vault; a network console without a token ended in a gateway traceback; a port over 65535
    and a negative embedder count were a traceback and silently none."""
    data = tmp_path / "data"
    refusals = {
        ("--model", "minilm-l6-int"): "invalid choice: 'minilm-l6-int'",
        ("--host", "0.0.0.0"): "--host 0.0.0.0 is not loopback: set K0_CONSOLE_TOKEN",
        ("--port", "99999"): "99999 is no port (0-65535)",
        ("--embedders", "-1"): "-1 is below 0",
    }
    for flag, said in refusals.items():
        out = run("up", "--vault", str(vault), "--data-dir", str(data), *flag)
        assert out.returncode != 0 and said in out.stderr, (flag, out.stderr)
    env = {**os.environ, "K0_MODEL": "foo"}
    out = subprocess.run(
        [K0MARU, "up", "--vault", str(vault), "--data-dir", str(data)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "unknown embedding model 'foo'" in out.stderr
    assert not data.exists()  # nothing started, nothing kept


def test_a_search_for_text_that_starts_with_a_dash_is_told_how(vault: Path):
    """A JVM flag pasted from a log was only "unrecognized arguments"; a mistyped flag is not told so."""
    out = run("search", "--vault", str(vault), "-XX:MaxRAMPercentage=75")
    assert out.returncode == 2
    assert "put -- before it: k0maru search -- -XX:MaxRAMPercentage=75" in out.stderr
    typo = run("search", "--vault", str(vault), "--limt", "3", "timeout")
    assert typo.returncode == 2 and "unrecognized arguments: --limt" in typo.stderr and "put --" not in typo.stderr


def test_status_and_search_read_a_team_deployment_from_its_addresses(vault: Path, tmp_path: Path):
    """The README says `k0maru status` lists a team deployment's workers; it read only a local
    stack's files and said no stack was running. With K0_SCANNER_ADDR, K0_RETRIEVER_ADDR and
    K0_OFFLOAD_ADDR (and the token) it asks those services, as `k0maru mcp` does. `k0maru search`
    said "no stack is running" there; it now searches the team's services."""
    from k0maru_cli import Launcher

    (vault / "runbooks").mkdir()
    (vault / "runbooks" / "pager.md").write_text("# Pager rotation\n\nThe on-call hands over the pager on Mondays.\n")
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)
    state = launcher.start()
    try:
        env = {
            **os.environ,
            "K0_SCANNER_ADDR": state.addresses["scanner"],
            "K0_RETRIEVER_ADDR": state.addresses["retriever"],
            "K0_OFFLOAD_ADDR": state.addresses["offload"],
            "K0_GRPC_TOKEN": state.grpc_token + "\n",  # as a secret file gives it
        }
        out = subprocess.run(
            [K0MARU, "status", "--vault", "/srv/team-notes"], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert "vault   /srv/team-notes" in out.stdout and "retriever    SERVING" in out.stdout
        elsewhere = tmp_path / "no-stack-here"  # the vault named here runs no stack: the team's answers
        elsewhere.mkdir()
        found = subprocess.run(
            [K0MARU, "search", "--vault", str(elsewhere), "--folder", "runbooks", "--json", "who hands over the pager"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert found.returncode == 0, found.stdout + found.stderr
        assert [h["path"] for h in json.loads(found.stdout)["hits"]] == ["runbooks/pager.md"]
        (vault / "runbooks" / "escalation.md").write_text("# Escalation\n\nPage the database owner after 15 minutes.\n")
        scanned = subprocess.run(
            [K0MARU, "scan", "--vault", str(elsewhere)], env=env, capture_output=True, text=True, timeout=120
        )
        assert scanned.returncode == 0 and json.loads(scanned.stdout)["added"] == 1, scanned.stdout + scanned.stderr
        assert list(elsewhere.iterdir()) == []  # the team's scanner scanned, nothing here
        env["K0_GRPC_TOKEN"] = "wrong"
        refused = subprocess.run(
            [K0MARU, "search", "--vault", str(elsewhere), "pager"], env=env, capture_output=True, text=True, timeout=60
        )
        assert refused.returncode == 1 and "token" in refused.stderr.lower() and "Traceback" not in refused.stderr
    finally:
        launcher.stop()


def test_mcp_refuses_a_team_deployment_named_in_part(vault: Path, tmp_path: Path):
    """With K0_OFFLOAD_ADDR forgotten, `k0maru mcp` started a local stack on --vault without a word,
    and the agent searched that instead of the team's memory."""
    env = {**os.environ, "K0_SCANNER_ADDR": "10.0.0.5:50051", "K0_RETRIEVER_ADDR": "10.0.0.5:50053"}
    env.pop("K0_OFFLOAD_ADDR", None)
    out = subprocess.run(
        [K0MARU, "mcp", "--vault", str(vault), "--data-dir", str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode != 0 and "K0_SCANNER_ADDR, K0_RETRIEVER_ADDR set but not K0_OFFLOAD_ADDR" in out.stderr
    assert not (tmp_path / "data").exists()  # no local stack started


def test_a_chinese_vault_gets_semantic_search_with_no_flag(tmp_path: Path):
    """No --model: the launcher reads the vault's script mix and picks the multilingual model."""
    vault = write_notes(
        tmp_path / "v",
        {
            "日记/猫.md": "# 我的猫\n\n家里的小猫每天下午都趴在窗台上晒太阳睡觉。\n",
            "日记/火车.md": "# 出差\n\n今天坐高铁去上海开会，车厢里很安静。\n",
            "日记/做饭.md": "# 晚饭\n\n晚上用番茄和鸡蛋炒了一盘菜，味道不错。\n",
        },
    )
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0)
    state = launcher.start()
    try:
        assert launcher.model_choice is not None and launcher.model_choice.model == "use-multilingual"
        client = state.client()
        from k0maru.v1 import retriever_pb2

        def indexed() -> bool:
            s = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 10)
            return s.documents == 3 and s.chunks_with_vectors == s.chunks

        wait_for(indexed, 120, "vectors for the Chinese notes")
        reply = client.call(
            client.retriever.Search,
            retriever_pb2.SearchRequest(query="宠物在阳光下休息", limit=3, mode=retriever_pb2.SEARCH_MODE_HYBRID),
            10,
        )
        assert {c.channel: c.ran for c in reply.channels} == {"bm25": True, "vector": True}
        vector = client.call(
            client.retriever.Search,
            retriever_pb2.SearchRequest(query="宠物在阳光下休息", limit=3, mode=retriever_pb2.SEARCH_MODE_VECTOR),
            10,
        )
        assert vector.hits[0].path == "日记/猫.md"
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 10)
        assert status.embedding_model.startswith("use-multilingual")
        client.close()
        # --explain says how much each channel counted for this query (fusion's weights)
        where = ("--vault", str(vault), "--data-dir", str(tmp_path / "data"))
        explained = run("search", "晒太阳的猫", *where, "--explain").stdout.splitlines()
        assert re.fullmatch(
            r"\(channels weighed: bm25 0\.\d\d \(confidence [\d.]+\), vector 0\.\d\d \(confidence [\d.]+\)\)",
            explained[0],
        ), explained[:2]
    finally:
        launcher.stop()


def test_a_stack_started_with_its_own_data_dir_is_found_without_it(vault: Path, tmp_path: Path):
    """`up --data-dir D`, then `status` / `stop` without it said no stack was running, and `stop`
    exited 0 with the stack left up."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("K0_DATA_DIR", None)
    where = ("--vault", str(vault))
    up = subprocess.Popen(
        [K0MARU, "up", *where, "--data-dir", str(tmp_path / "elsewhere"), "--embedders", "0", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([K0MARU, *args], env=env, capture_output=True, text=True, timeout=120)

    try:
        wait_for(lambda: cli("status", *where).returncode == 0, 90, "the stack, found without --data-dir")
        # offload too: a local engine wrote the log without the stack's ledger ("(piped)", "exit ?")
        offloaded = cli("offload", *where, "--", "bash", "-c", "seq 1 80; exit 3")
        assert offloaded.returncode == 3, offloaded.stderr
        state = StackState.load(tmp_path / "elsewhere")
        assert state is not None
        logs = call_console(state, "GET", "/api/logs")["logs"]
        assert [(e["command"], e["exit_code"]) for e in logs] == [("bash -c seq 1 80; exit 3", 3)], logs
        stop = cli("stop", *where)
        assert stop.returncode == 0 and stop.stdout.startswith(f"stopped the stack for {vault}"), stop
        assert up.wait(timeout=30) == 0
        assert not any((tmp_path / "xdg").rglob("stack-elsewhere"))  # taken back as it stopped
    finally:
        if up.poll() is None:
            up.kill()


def test_stop_ends_a_stack_started_in_the_background(vault: Path, tmp_path: Path):
    """`k0maru up` left running in the background (nohup, a service manager) is stopped by
    `k0maru stop` as Ctrl+C would: every process gone, stack.json removed; again, nothing to stop.
    Its status names the files not indexed, and why (before, only how many, in the console)."""
    write_notes(vault, {"a.md": "# A\n\nalpha\n", "b.md": "---\ntitle: [oops\n---\n# B\n\nbroken frontmatter\n"})
    (vault / "scan.md").write_bytes(b"%PDF-1.7\x00\x01")
    (vault / "周会.md".encode("gbk").decode("utf-8", "surrogateescape")).write_bytes(b"# x\n")
    where = ("--vault", str(vault), "--data-dir", str(tmp_path / "data"))
    up = subprocess.Popen(
        [K0MARU, "up", *where, "--embedders", "0", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # as nohup leaves it: not in the test's process group
    )
    try:
        wait_for(lambda: run("status", *where).returncode == 0, 90, "the stack")
        status = run("status", *where).stdout
        assert "skipped 2 files not indexed:\n" in status, status
        assert "        scan.md: binary content (NUL bytes)\n" in status
        assert "(in GBK it reads '周会.md': a zip made on Windows? `convmv -r -f gbk -t utf-8" in status
        assert "notes   1 note indexed with problems:\n        b.md: frontmatter is not valid YAML" in status
        said = json.loads(run("status", "--json", *where).stdout)
        assert said["skipped"]["count"] == 2 and "scan.md: binary content (NUL bytes)" in said["skipped"]["files"]
        assert said["notes_with_problems"]["count"] == 1
        found = run("search", "broken frontmatter", *where, "--mode", "bm25").stdout.splitlines()
        assert found[0].startswith(" 1. B  [b.md:") and found[2].startswith("    ⚠ frontmatter is not valid YAML")
        state = json.loads((tmp_path / "data" / "stack.json").read_text())
        pids = [state["launcher_pid"], *state["pids"].values()]
        out = run("stop", *where)
        assert out.returncode == 0 and out.stdout.startswith(f"stopped the stack for {vault}"), out
        assert up.wait(timeout=30) == 0
        wait_for(lambda: not any(pid_alive(p) for p in pids), 30, "every process of the stack")
        assert not (tmp_path / "data" / "stack.json").exists()
        again = run("stop", *where)
        assert again.returncode == 0 and again.stdout == f"no stack is running for {vault}\n"
    finally:
        if up.poll() is None:
            up.kill()

"""Every reply is checked before it is used: a server that is not the API, a reply of another
shape, a port that never answers. Each ends in an error record or one line naming the endpoint and
what came back; never a traceback, never a wait of minutes."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fake_llm import SERVE_POLL
from helpers import EXAMPLE, nonempty
from ragassay.cli import main

BODIES = {
    "html": (
        "text/html",
        b"<!DOCTYPE html><html><head><title>nginx</title></head><body>Welcome</body></html>",
        "an HTML page",
    ),
    "text": ("text/plain", b"OK", "plain text ('OK')"),
    "empty-object": ("application/json", b"{}", "JSON without a 'choices' list"),
    "list": ("application/json", b"[1, 2]", "JSON without a 'choices' list"),
}


class Replying:
    """A local server that answers every POST with one fixed body."""

    def __init__(self, content_type: str, body: bytes):
        self.calls = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                server.calls += 1
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that hung up: not the test's concern
                pass

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": SERVE_POLL}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def answers_file(tmp_path: Path, n: int = 1) -> Path:
    p = tmp_path / "answers.jsonl"
    p.write_text(
        "".join(
            json.dumps({"id": f"a{i}", "question": "How long?", "reference": "5 days", "response": f"about {i} weeks"})
            + "\n"
            for i in range(n)
        )
    )
    return p


@pytest.mark.parametrize("shape", list(BODIES))
def test_a_reply_that_is_not_a_chat_completion_is_named_in_one_line(tmp_path, capsys, shape):
    content_type, body, what = BODIES[shape]
    with Replying(content_type, body) as server:
        code = main(["ping", "--base-url", server.url, "--model", "m"])
        ping = capsys.readouterr()
        out = tmp_path / "c.jsonl"
        check = main(
            [
                "check",
                str(answers_file(tmp_path, 6)),
                "-o",
                str(out),
                "--base-url",
                server.url,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
            ]
        )
        printed = capsys.readouterr()
        calls = server.calls
    expected = (
        f"the endpoint at {server.url} answered HTTP 200 with {what}, not a chat completion; "
        "is the base URL the API's root (it usually ends in /v1)?"
    )
    assert code == 1 and ping.err.strip() == f"ragassay ping: error: {expected}"
    assert "Traceback" not in ping.err + printed.err + printed.out
    # the first calls all failed the same way: the run stops early, nothing is graded, one line says why
    assert check == 1 and "stopped early" in printed.err and expected in printed.err
    assert calls <= 1 + 6  # ping's one call, then at most one per answer: no retries, no re-asks
    assert not out.exists() or all(json.loads(x)["status"] == "error" for x in out.read_text().splitlines())


def test_a_reply_without_a_message_is_an_error_record(tmp_path, capsys):
    body = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": None}],
        }
    ).encode()
    with Replying("application/json", body) as server:
        code = main(
            [
                "check",
                str(answers_file(tmp_path)),
                "-o",
                str(tmp_path / "c.jsonl"),
                "--base-url",
                server.url,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
            ]
        )
    printed = capsys.readouterr()
    (record,) = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert code == 1 and record["status"] == "error" and record["label"] is None
    assert record["error"] == "invalid: no usable answer after 3 tries: the answer had no message"
    assert "Traceback" not in printed.err + printed.out


def test_a_port_that_accepts_and_never_answers_fails_within_the_timeout(tmp_path, capsys, monkeypatch):
    from ragassay.llm import server_info

    # the questions asked of a local server first (its slots, its modes) wait 3 s for a silent port: the
    # claim here is about the calls' timeout, so that wait is shortened (it stays bounded in test_local_servers)
    monkeypatch.setattr(server_info, "ASK_TIMEOUT", 0.5)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # accepts connections (the kernel does), never reads or answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
    try:
        start = time.monotonic()
        code = main(
            [
                "judge",
                "--queries",
                str(EXAMPLE / "queries.jsonl"),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "--run",
                str(EXAMPLE / "runs" / "bm25.txt"),
                "--depth",
                "2",
                "-o",
                str(tmp_path / "j.jsonl"),
                "--base-url",
                url,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
                "--timeout",
                "1",
            ]
        )
        elapsed = time.monotonic() - start
    finally:
        silent.close()
    err = capsys.readouterr().err
    assert code == 1 and elapsed < 15, elapsed  # one timeout per call in flight, not the 300 s deadline
    assert "stopped early" in err and f"no answer from {url} within 1 s" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_cache_that_fills_the_disk_mid_run_costs_no_answer(tmp_path, capsys, monkeypatch):
    """Every answer received is journalled; the cache failing is one warning, the run completes,
    and a rerun asks the endpoint for nothing."""
    import sqlite3
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM
    from ragassay.llm.cache import Cache

    puts = []

    def full(self, *args, **kwargs):
        puts.append(1)
        if len(puts) > 2:
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, *args, **kwargs)

    real = Cache.put
    monkeypatch.setattr(Cache, "put", full)
    answers = answers_file(tmp_path, 8)
    out = tmp_path / "c.jsonl"
    with FakeLLM() as server:
        argv = [
            "check",
            str(answers),
            "-o",
            str(out),
            "--base-url",
            server.url,
            "--model",
            "m",
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--quiet",
            "--concurrency",
            "1",
        ]
        assert main(argv) == 0
        first = server.calls
        err = capsys.readouterr().err
        assert main(argv) == 0
        assert server.calls == first == 8  # nothing asked twice
    assert err.count("warning: the answer cache") == 1 and "database or disk is full" in err
    assert [json.loads(x)["status"] for x in out.read_text().splitlines()] == ["ok"] * 8


# ----------------------------------------------------------------------------- spending ceilings


def test_max_calls_sends_exactly_that_many_requests_keeps_what_is_done_and_exits_3(tmp_path, capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    out = tmp_path / "c.jsonl"
    argv = [
        "check",
        str(answers_file(tmp_path, 10)),
        "-o",
        str(out),
        "--model",
        "m",
        "--no-cache",
        "--quiet",
        "--concurrency",
        "1",
    ]
    with FakeLLM() as server:
        code = main(argv + ["--base-url", server.url, "--max-calls", "3"])
        printed = capsys.readouterr()
        assert server.calls == 3 and code == 3
        assert "stopped at the --max-calls 3 ceiling (3 requests sent); 7 check items not done" in printed.out
        assert "3 answers (0 from cache), 0 failed; 3 calls" in printed.out  # the ones left are not "failed"
        assert len(out.read_text().splitlines()) == 3  # the three answered are kept, no made-up record for the rest
        assert main(argv + ["--base-url", server.url]) == 0  # a rerun without the ceiling goes on
        assert server.calls == 10  # and asks only for the seven left
    assert len(out.read_text().splitlines()) == 10


def test_max_cost_stops_before_the_cost_is_passed(tmp_path, capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    argv = [
        "check",
        str(answers_file(tmp_path, 10)),
        "-o",
        str(tmp_path / "c.jsonl"),
        "--model",
        "m",
        "--no-cache",
        "--quiet",
        "--concurrency",
        "1",
        "--price-in",
        "100",
        "--price-out",
        "100",
        "--max-cost",
        "0.5",
    ]
    with FakeLLM() as server:
        code = main(argv + ["--base-url", server.url])
        calls = server.calls
    printed = capsys.readouterr()
    assert code == 3 and 0 < calls < 10 and "stopped at the --max-cost $0.5 ceiling" in printed.out
    assert main(argv[:-2] + ["--max-cost", "1", "--base-url", "http://127.0.0.1:9/v1", "--price-in", "-1"]) == 2


@pytest.mark.parametrize("ceiling", [1.0, 1.5, 3.0])
def test_max_cost_holds_with_many_calls_in_flight(tmp_path, capsys, ceiling):
    """32 calls at once against a slow server: each call's worst cost (its prompt and whole answer
    budget) is held while it is in flight, so calls that start together cannot pass the ceiling
    together (they did: 40% over it at --concurrency 32); what is spent stays under it."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    out = tmp_path / "c.jsonl"
    argv = [
        "check",
        str(answers_file(tmp_path, 40)),
        "-o",
        str(out),
        "--model",
        "m",
        "--no-cache",
        "--quiet",
        "--concurrency",
        "32",
        "--price-in",
        "200",
        "--price-out",
        "200",
        "--max-cost",
        str(ceiling),
        "--format",
        "json",
    ]
    with FakeLLM(delay=0.2) as server:
        code = main(argv + ["--base-url", server.url])
        sent = server.calls
    result = json.loads(capsys.readouterr().out)
    spent = sum(u["cost_usd"] for u in result["usage"].values())
    assert code == 3 and 0 < sent < 40
    assert spent <= ceiling, (spent, ceiling)


def test_max_cost_without_a_price_is_refused_before_anything_is_sent(tmp_path, capsys):
    code = main(
        [
            "check",
            str(answers_file(tmp_path)),
            "-o",
            str(tmp_path / "c.jsonl"),
            "--model",
            "my-local-model",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--max-cost",
            "1",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "--max-cost needs a price for model 'my-local-model'" in err


def test_generate_with_a_huge_limit_on_few_chunks_stops_when_its_chunks_are_spent(tmp_path, capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(line + "\n" for line in (EXAMPLE / "chunks.jsonl").read_text().splitlines()[:6]))
    with FakeLLM() as server:
        code = main(
            [
                "generate",
                str(chunks),
                "-o",
                str(tmp_path / "q.jsonl"),
                "--limit",
                "100000",
                "--base-url",
                server.url,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
            ]
        )
        calls = server.calls
    out = capsys.readouterr().out
    assert code == 3 and "fell short of the target" in out
    assert "stopped" in out and calls < 6 * 2 * 8  # each chunk seeds at most two candidates of at most ~8 calls


def test_generate_stops_at_max_calls(tmp_path, capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    with FakeLLM() as server:
        code = main(
            [
                "generate",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(tmp_path / "q.jsonl"),
                "--limit",
                "20",
                "--base-url",
                server.url,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
                "--max-calls",
                "10",
            ]
        )
        calls = server.calls
    out = capsys.readouterr().out
    assert code in (1, 3) and calls <= 10 and "ceiling" in out


def test_generate_says_why_the_models_answers_were_unusable(tmp_path, capsys):
    body = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Sure! Here is a question."},
                }
            ],
        }
    )
    with Replying("application/json", body.encode()) as server:
        code = main(
            [
                "generate",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(tmp_path / "q.jsonl"),
                "--limit",
                "2",
                "--base-url",
                server.url,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
            ]
        )
    out = capsys.readouterr().out
    assert code == 1
    assert "model calls failed" in out and "the answer is not valid JSON" in out


def test_sigterm_ends_a_run_with_one_line_and_a_rerun_resumes(tmp_path):
    import signal
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    out = tmp_path / "c.jsonl"
    with FakeLLM(delay=0.3) as server:
        argv = [
            sys.executable,
            "-m",
            "ragassay",
            "check",
            str(answers_file(tmp_path, 20)),
            "-o",
            str(out),
            "--base-url",
            server.url,
            "--model",
            "m",
            "--no-cache",
            "--quiet",
            "--concurrency",
            "1",
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: server.calls >= 3, "the server to receive 3 requests", proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 143 and "Traceback" not in err
        assert err.strip().splitlines()[-1] == (
            "terminated (SIGTERM); a rerun of the same command resumes where this one stopped"
        )
        journal = Path(f"{out}.journal")
        kept = len(journal.read_text().splitlines()) if journal.exists() else 0
        assert kept >= 2
        before = server.calls
        server.delay = 0  # the delay was to stop the first run mid-way; the rerun's claim is in the counts
        assert subprocess.run(argv, capture_output=True, text=True, timeout=60).returncode == 0
        assert server.calls - before <= 20 - kept  # the journalled answers are not asked again
    assert len(out.read_text().splitlines()) == 20


DEADLINE = 120.0  # seconds to wait for an event: generous, so that a loaded machine is slow, not wrong


def wait_for(happened, what: str, proc=None, timeout: float = DEADLINE) -> None:
    """Wait until ``happened()`` (an event another process causes: a request received, a line
    written), polling; fail naming ``what`` after ``timeout``, or at once if ``proc`` ended first."""
    deadline = time.monotonic() + timeout
    while not happened():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the command ended ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.01)


STOPPED_LINE = "terminated (SIGTERM); a rerun of the same command resumes where this one stopped"


class Starting:
    """A command in its own process, its stderr read as it comes. Under PYTHONPROFILEIMPORTTIME
    Python says each module it has imported, the moment it has: ``ragassay.cli``'s ``main()`` takes
    SIGTERM over first of all (importing only ``signal``), so every import said after those two
    began with the handler in place. These lines are the observable moments of a start."""

    def __init__(self, argv: list[str]):
        import os
        import subprocess

        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"},
        )
        self.imports_after_handler = 0
        self.said: list[str] = []  # what is not an import line
        self._stage = "before main"
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            if not line.startswith("import time:"):
                self.said.append(line.rstrip("\n"))
                continue
            module = line.rsplit("|", 1)[1].strip()
            if self._stage == "before main":
                if module == "ragassay.cli":  # imported whole: main() is called next
                    self._stage = "main"
            elif self._stage == "main" and module == "signal":
                self._stage = "handler"  # main's own import, just before the handler is set
            else:
                self._stage = "handler"
                self.imports_after_handler += 1

    def finish(self, timeout: float = DEADLINE) -> list[str]:
        """Wait for the end; what the command said on stderr, import lines left out."""
        self.proc.stdout.read()
        self.proc.wait(timeout)
        self._reader.join(timeout)
        return self.said


def test_sigterm_at_any_moment_of_a_run_ends_with_the_one_line_and_no_traceback(tmp_path):
    """SIGTERM at moments spread over a check run, each found by an event, not by a clock: the
    process just started; the 1st, 3rd, 10th, 40th, 120th and 250th module imported once main() has
    its handler (the parser's modules, then the command's); the first request at the server; the
    first record in the journal. From the handler on, every one ends with exit 143 and the one
    line: the event loop's tasks are cancelled in order rather than torn apart mid-step, so asyncio
    prints nothing of its own ("Event loop is closed", "Task was destroyed but it is pending").
    Only a signal that comes before main() (the interpreter starting, `import ragassay.cli`) can
    find the default action: killed by it (-15), nothing started, nothing said."""
    import signal
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    ended: dict[str, int] = {}
    moments = ["at once", *(f"import {n}" for n in (1, 3, 10, 40, 120, 250)), "first request", "first record"]
    with FakeLLM(delay=0.5) as server:
        for n, moment in enumerate(nonempty(moments)):
            out = tmp_path / f"c{n}.jsonl"
            journal = Path(f"{out}.journal")
            calls = server.calls
            run = Starting(
                [
                    sys.executable,
                    "-m",
                    "ragassay",
                    "check",
                    str(EXAMPLE / "answers.jsonl"),
                    "--chunks",
                    str(EXAMPLE / "chunks.jsonl"),
                    "-o",
                    str(out),
                    "--base-url",
                    server.url,
                    "--model",
                    "m",
                    "--no-cache",
                ]
            )
            if moment.startswith("import "):
                k = int(moment.split()[1])
                wait_for(
                    lambda run=run, k=k: run.imports_after_handler >= k, f"the {k}th import after the handler", run.proc
                )
            elif moment == "first request":
                wait_for(lambda calls=calls: server.calls > calls, "a request at the server", run.proc)
            elif moment == "first record":
                wait_for(
                    lambda journal=journal: journal.exists() and b"\n" in journal.read_bytes(),
                    "a record in the journal",
                    run.proc,
                )
            run.proc.send_signal(signal.SIGTERM)
            said = run.finish()
            ended[moment] = run.proc.returncode
            if moment == "at once" and run.proc.returncode == -signal.SIGTERM:  # before main(): nothing started
                assert said == [] and not out.exists() and not journal.exists(), said
                continue
            assert run.proc.returncode == 143, (moment, said)
            assert said == [STOPPED_LINE], (moment, said)
            assert not out.exists(), moment  # stopped, not finished: the work done is in the journal
            if moment == "first record":
                assert journal.read_bytes().count(b"\n") >= 1  # kept: a rerun goes on from there
    assert all(ended[m] == 143 for m in moments[1:]), ended


def test_sigterm_while_asyncio_is_half_imported_ends_the_command_not_with_a_traceback(monkeypatch):
    """A SIGTERM that comes while asyncio is being imported (slow on a first run, compiling) finds
    the module half made in sys.modules: no loop can run yet, so the command ends at once, as
    anywhere else outside a loop (it used to end in AttributeError and a traceback)."""
    import types

    from ragassay import cli

    monkeypatch.setitem(sys.modules, "asyncio", types.ModuleType("asyncio"))  # not yet get_running_loop
    with pytest.raises(cli._Terminated):
        cli._raise_terminated(15, None)


def test_sigterm_that_lands_where_python_drops_exceptions_still_ends_the_command(monkeypatch, capsys):
    """A SIGTERM handled inside a weakref callback (as when an import lock is freed) raises where
    Python only reports the exception and goes on: the command used to run to its end, print
    "Exception ignored in ..." and exit 0. It ends with 143 and the one line, nothing else said;
    the work after the callback never runs."""
    import os
    import signal
    import weakref

    from ragassay import cli

    went_on: list[str] = []

    class Lock:
        pass

    def run(argv):
        def callback(_ref):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs here, inside the callback
                pass

        lock = Lock()
        ref = weakref.ref(lock, callback)
        del lock  # the callback runs now
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the signal sent again ends this wait
            pass
        went_on.append("after the callback")  # not reached
        return 0 if ref is not None else 1

    monkeypatch.setattr(cli, "_run", run)
    previous_hook = sys.unraisablehook
    assert cli.main(["ping"]) == 143
    said = capsys.readouterr().err.splitlines()
    assert said == [STOPPED_LINE]
    assert went_on == []
    assert sys.unraisablehook is previous_hook  # given back
    assert signal.getsignal(signal.SIGTERM) is not cli._raise_terminated


def test_a_coroutine_a_stopped_run_leaves_unawaited_is_not_warned_about_after_the_one_line(monkeypatch, capsys):
    """A SIGTERM cancels the run's tasks; a library's coroutine made and not yet awaited at that moment
    (anyio's connection attempt) is collected unawaited, and Python would print "coroutine ... was
    never awaited" after the one line (test_sigterm_at_any_moment failed so, now and then)."""
    import asyncio
    import gc
    import os
    import signal
    import warnings

    from ragassay import cli

    def run(argv):
        async def attempt():
            return None

        async def body():
            made = attempt()  # made, never awaited
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(10)
            await made

        asyncio.run(body())
        return 0

    monkeypatch.setattr(cli, "_run", run)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert cli.main(["ping"]) == 143
        gc.collect()
    assert not [w for w in seen if "never awaited" in str(w.message)], [str(w.message) for w in seen]
    assert capsys.readouterr().err.splitlines() == [STOPPED_LINE]

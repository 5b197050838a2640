"""The stage engine on a tiny stage: keys, journal, one record per key, locks, early stop, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
import respx
from pydantic import BaseModel

from fake_llm import chat_reply, make_llm
from ragassay.errors import RagassayError
from ragassay.llm import LLMError
from ragassay.runtime.engine import (
    Call,
    OutputLock,
    OutputStore,
    Stage,
    StageAborted,
    StageRun,
    WorkItem,
    fingerprint,
    lock_folder,
    run_stage,
)

BASE = "http://engine.test/v1"
URL = f"{BASE}/chat/completions"
KEY = "sk-engine-secret-0123456789"


class Grade(BaseModel):
    grade: int


class EchoStage(Stage):
    """One call per text; the record holds the grade the model gave."""

    name = "echo"

    def plan(self, texts: dict[str, str], model: str = "m") -> list[WorkItem]:
        return [
            WorkItem(
                fingerprint("echo", model, t), [Call.of(0, [{"role": "user", "content": t}], Grade, "echo", 10)], ident
            )
            for ident, t in texts.items()
        ]

    def identity(self, record: dict) -> str:
        return record["id"]

    async def finish(self, item, answers, llms):
        return [{"id": item.payload, "grade": answers[0].grade, "status": "ok", "key": item.key}]

    def error_records(self, item, error):
        return [{"id": item.payload, "grade": None, "status": "error", "error": error.reason, "key": item.key}]


async def run(tmp_path, texts, out, **kw) -> StageRun:
    stage = EchoStage()
    llm = make_llm(tmp_path, BASE, "m", api_key=KEY, **kw)
    try:
        return await run_stage(stage, stage.plan(texts), [llm], OutputStore(out, stage.identity), quiet=True)
    finally:
        llm.close()


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@respx.mock
async def test_failed_items_are_retried_and_the_final_file_has_one_record_per_key(tmp_path):
    state = {"down": True}

    def handler(request):
        text = json.loads(request.content)["messages"][-1]["content"]
        if text == "b" and state["down"]:
            return httpx.Response(500, json={"error": {"message": "flaky"}})
        return chat_reply({"grade": 2})

    route = respx.post(URL).mock(side_effect=handler)
    out = tmp_path / "out.jsonl"
    first = await run(tmp_path, {"1": "a", "2": "b", "3": "c"}, out, max_attempts=2)
    assert (first.ok, first.errors, first.exit_code) == (2, 1, 3)
    assert "HTTP 500" in first.failure_text() and "rerun the same command" in first.failure_text()
    state["down"] = False
    before = route.call_count
    second = await run(tmp_path, {"1": "a", "2": "b", "3": "c"}, out, max_attempts=2)
    assert route.call_count == before + 1  # only the failed item is asked again
    assert (second.skipped_done, second.ok, second.errors, second.exit_code) == (2, 3, 0, 0)
    assert [(r["id"], r["status"]) for r in records(out)] == [("1", "ok"), ("2", "ok"), ("3", "ok")]  # no stale error
    assert not (tmp_path / "out.jsonl.journal").exists()


@respx.mock
async def test_a_changed_input_is_redone_and_replaces_its_record_others_are_kept(tmp_path):
    route = respx.post(URL).mock(return_value=chat_reply({"grade": 1}))
    out = tmp_path / "out.jsonl"
    await run(tmp_path, {"1": "a", "2": "b"}, out)
    assert route.call_count == 2
    done = await run(tmp_path, {"2": "b changed"}, out)
    assert route.call_count == 3 and [r["id"] for r in done.records] == ["2"]
    final = {r["id"]: r for r in records(out)}
    assert set(final) == {"1", "2"} and final["2"]["key"] == fingerprint("echo", "m", "b changed")
    assert len(records(out)) == 2


@respx.mock
async def test_the_key_never_reaches_outputs_journal_or_cache(tmp_path, capsys):
    respx.post(URL).mock(
        side_effect=[chat_reply({"grade": 1}), httpx.Response(401, json={"error": {"message": f"bad key {KEY}"}})]
    )
    out = tmp_path / "out.jsonl"
    done = await run(tmp_path, {"1": "a", "2": "b"}, out)
    captured = capsys.readouterr()
    assert done.exit_code == 3 and "auth" in out.read_text()
    for blob in (
        out.read_text(),
        captured.out,
        captured.err,
        (tmp_path / "cache.sqlite").read_bytes().decode("latin-1"),
    ):
        assert KEY not in blob


@respx.mock
async def test_a_dead_endpoint_stops_after_the_first_failures(tmp_path):
    route = respx.post(URL).mock(side_effect=httpx.ConnectError("connection refused"))
    out = tmp_path / "out.jsonl"
    with pytest.raises(
        StageAborted, match="stopped early: the first \\d+ echo calls all failed the same way: could not connect"
    ) as e:
        await run(tmp_path, {str(i): f"t{i}" for i in range(40)}, out, concurrency=1)
    failed = int(str(e.value).split("the first ")[1].split()[0])
    assert failed == 3 and route.call_count == 2 * failed  # one try + one retry each, not 40 x 6
    assert not out.exists()
    assert len(records(tmp_path / "out.jsonl.journal")) == failed  # kept: the rerun sees them


def test_a_kill_mid_line_loses_only_that_line(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    (tmp_path / "o.jsonl.journal").write_text(
        '{"id": "a", "status": "ok", "key": "ka"}\n'
        '{"id": "b", "status": "error", "error": "x", "key": "kb"}\n{"id": "c", "sta'
    )
    store = OutputStore(out, lambda r: r["id"])
    assert store.done("ka") and not store.done("kb") and not store.done("kc")
    assert "incomplete last line" in capsys.readouterr().err


def test_an_output_ragassay_did_not_write_is_refused_with_file_and_line(tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_text('{"id": "a", "status": "ok", "key": "ka"}\nnot json\n')
    with pytest.raises(RagassayError, match=r"o.jsonl:2: not valid JSON"):
        OutputStore(out, lambda r: r["id"])


def _hold_lock(path) -> subprocess.Popen:
    """Another process that holds the lock on ``path`` until it is killed."""
    code = (
        "import sys, time; from ragassay.runtime.engine import OutputLock; OutputLock(sys.argv[1]).acquire(); "
        "print('held', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_on_one_output_fails_and_names_the_holder(tmp_path):
    out = tmp_path / "o.jsonl"
    holder = _hold_lock(out)
    try:
        with pytest.raises(RagassayError, match=r"o.jsonl is being written by ragassay \(pid \d+"):
            OutputLock(out).acquire()
        (tmp_path / "link.jsonl").symlink_to(out)  # a symlink to a locked output meets the same lock
        with pytest.raises(RagassayError, match="is being written by"):
            OutputLock(tmp_path / "link.jsonl").acquire()
    finally:
        holder.kill()
        holder.wait()
    out.write_text("{}\n")
    holder = _hold_lock(out)
    try:
        os.link(out, tmp_path / "twin.jsonl")  # a hard link to an existing locked output, too
        with pytest.raises(RagassayError, match="twin.jsonl is being written by"):
            OutputLock(tmp_path / "twin.jsonl").acquire()
        assert not OutputLock._held  # the refused lock left nothing held
    finally:
        holder.kill()
        holder.wait()
    with OutputLock(out):  # released: the next run may write
        pass


def test_an_inode_lock_outlived_by_its_inode_refuses_nobody(tmp_path):
    """A run that rewrites its output atomically keeps the old inode's lock while its path is a new file,
    and the file system may give the old inode number to an unrelated file. That file's writer must not be
    told that the first run writes it; a second writer of the same file still is."""
    out, unrelated = tmp_path / "o.jsonl", tmp_path / "other.jsonl"
    out.write_text("{}\n")
    holder = _hold_lock(out)  # holds o.jsonl's path lock and its inode's lock
    try:
        os.link(out, unrelated)  # the old inode lives on under another name, as a reused inode number does
        fresh = tmp_path / "o.jsonl.tmp"
        fresh.write_text("{}\n{}\n")
        os.replace(fresh, out)  # the holder's output is now another file (its atomic rewrite)
        with OutputLock(unrelated):  # not refused in the holder's name
            os.link(unrelated, tmp_path / "twin.jsonl")
            with pytest.raises(RagassayError, match=r"twin.jsonl is being written by ragassay \(pid \d+"):
                OutputLock(tmp_path / "twin.jsonl").acquire()  # two live writers of one file still meet
        with pytest.raises(RagassayError, match=r"o.jsonl is being written by ragassay \(pid \d+"):
            OutputLock(out).acquire()  # the holder's own path stays its own
    finally:
        holder.kill()
        holder.wait()
    assert not OutputLock._held


def test_an_inode_lock_of_a_removed_output_refuses_nobody(tmp_path):
    """The holder's output removed (and its inode given to another file) counts as another file, too; a
    lock file of an older ragassay, which names no output, is believed."""
    out, unrelated = tmp_path / "o.jsonl", tmp_path / "other.jsonl"
    out.write_text("{}\n")
    holder = _hold_lock(out)
    try:
        os.link(out, unrelated)
        out.unlink()
        with OutputLock(unrelated):
            pass
        st = unrelated.stat()
        old = lock_folder() / f"{st.st_dev}-{st.st_ino}.lock"
        old.write_text("ragassay (pid 1, started 2020-01-01 00:00:00: ragassay judge)")  # no output line
        with pytest.raises(RagassayError, match=r"other.jsonl is being written by ragassay \(pid 1,"):
            OutputLock(unrelated).acquire()
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_reentrant_within_one_process(tmp_path):
    """The command locks every output, then the stage locks its own again: one holder, counted."""
    out = tmp_path / "o.jsonl"
    with OutputLock(out):
        with OutputLock(tmp_path / "." / "o.jsonl"):
            pass
        assert OutputLock._held  # still held by the outer one
    assert not OutputLock._held


def test_exit_codes():
    from collections import Counter

    def run_of(ok, errors):
        return StageRun("s", [], ok + errors, 0, ok, errors, Counter({"transport: down": errors} if errors else {}))

    assert [run_of(3, 0).exit_code, run_of(2, 1).exit_code, run_of(0, 3).exit_code] == [0, 3, 1]


def test_a_call_knows_its_exact_request():
    call = Call.of(0, [{"role": "user", "content": "hi"}], Grade, "s", 10, temperature=0.7, sample=2)
    assert call.message_list == [{"role": "user", "content": "hi"}]
    assert call.params(0.0) == {"temperature": 0.7, "max_tokens": 10, "seed": None, "sample": 2}
    assert Call.of(0, [{"role": "user", "content": "hi"}], Grade, "s", 10).params(0.3)["temperature"] == 0.3


async def test_one_llm_serves_two_event_loops(tmp_path):
    """Stages run one after another with asyncio.run each (the demo, a notebook): no loop-bound state."""
    import asyncio

    with respx.mock:
        respx.post(URL).mock(return_value=chat_reply({"grade": 3}))
        llm = make_llm(tmp_path, BASE, "m", api_key=KEY, use_cache=False)

        def ask():
            return asyncio.run(llm.ask([{"role": "user", "content": "x"}], Grade))

        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as ex:  # a fresh loop outside the test's own
            assert ex.submit(ask).result().grade == 3
            assert ex.submit(ask).result().grade == 3


def test_llm_error_reason_names_the_kind():
    assert LLMError("auth", "refused").reason == "auth: refused"


@respx.mock
async def test_an_interrupted_run_of_other_items_is_not_dropped_by_the_next_run(tmp_path):
    respx.post(URL).mock(return_value=chat_reply({"grade": 2}))
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.journal").write_text('{"id": "9", "grade": 1, "status": "ok", "key": "k9"}\n')
    await run(tmp_path, {"1": "a"}, out)
    assert {r["id"]: r["grade"] for r in records(out)} == {"9": 1, "1": 2}


def test_lock_files_are_removed_on_release_and_a_waiting_process_never_holds_a_stale_one(tmp_path, monkeypatch):
    """Locks leave nothing behind; and the classic race of removing a lock file (B opened the old
    file and locked it after A removed it) ends with B holding the file at the path, not the removed one."""
    import os

    from ragassay.runtime.engine.lock import _lock_file

    out = tmp_path / "o.jsonl"
    lock = OutputLock(out)
    with lock:
        assert lock.path.exists() and "pid" in lock.path.read_text()
    assert not lock.path.exists()
    stale = open(lock.path, "a+")  # B opened the lock file ...
    os.unlink(lock.path)  # ... A released (removed it) ...
    lock.path.write_text("")  # ... and C made a new one, which nobody holds yet
    _lock_file(stale)  # B's lock on the removed file succeeds
    real_open_locked = OutputLock._open_locked
    opened = []

    def first_the_stale_one(self, path):
        f = stale if not opened else real_open_locked(self, path)
        opened.append(f)
        return f

    monkeypatch.setattr(OutputLock, "_open_locked", first_the_stale_one)
    b = OutputLock(out).acquire()
    held = OutputLock._held[b.path][0]
    assert len(opened) == 2 and held is opened[1] and stale.closed  # B noticed and locked the file at the path
    assert os.fstat(held.fileno()).st_ino == os.stat(lock.path).st_ino
    monkeypatch.undo()
    with pytest.raises(RagassayError, match="is being written by"):
        subprocess_lock_attempt(out)
    b.release()
    assert not lock.path.exists()


def subprocess_lock_attempt(out) -> None:
    """Another process trying the lock (flock locks are per open file, so a second process is the test)."""
    import subprocess
    import sys

    code = f"from ragassay.runtime.engine import OutputLock; OutputLock({str(out)!r}).acquire()"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if "is being written by" in p.stderr:
        raise RagassayError(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr

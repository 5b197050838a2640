"""Batch engines: export the calls as Batch API request lines, answer them with a local stand-in for
vLLM's run_batch, import the output, and get the same records as the live path, step by step;
error lines become error records; shards partition the plan and merge back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm import FakeLLM, run_batch  # noqa: E402
from helpers import EXAMPLE, nonempty
from ragassay.cli import main  # noqa: E402
from ragassay.llm.batch import write_requests  # noqa: E402


def _records(path: Path) -> list[dict]:
    return sorted(
        (json.loads(x) for x in path.read_text().splitlines() if x.strip()), key=lambda r: r.get("key") or r["id"]
    )


def _rounds(argv: list[str], tmp: Path, fail=lambda line: None, limit: int = 40) -> tuple[int, int]:
    """Export, answer with the stand-in, import; until nothing is left. Returns (rounds, requests)."""
    imports: list[str] = []
    total = 0
    for rnd in range(1, limit):
        req = tmp / f"req{rnd}.jsonl"
        assert main(argv + ["--export-requests", str(req)] + [x for f in imports for x in ("--import-results", f)]) in (
            0,
            3,
        )
        if not req.exists():
            return rnd - 1, total
        out = tmp / f"out{rnd}.jsonl"
        total += run_batch(req, out, fail)
        imports = [str(out)]
    raise AssertionError("the rounds did not end")


JUDGE = [
    "judge",
    "--queries",
    str(EXAMPLE / "queries.jsonl"),
    "--chunks",
    str(EXAMPLE / "chunks.jsonl"),
    "--run",
    str(EXAMPLE / "runs" / "bm25.txt"),
    "--depth",
    "3",
    "--model",
    "m",
    "--quiet",
]


def test_judge_through_a_batch_engine_writes_the_live_records(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM() as server:
        assert (
            main(
                JUDGE
                + [
                    "-o",
                    str(tmp_path / "live.jsonl"),
                    "--coverage-out",
                    str(tmp_path / "live_cov.jsonl"),
                    "--no-cache",
                    "--base-url",
                    server.url,
                ]
            )
            == 0
        )
        live_calls = server.calls
    monkeypatch.delenv("OPENAI_API_KEY")  # exporting needs no endpoint and no key, only the model
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    argv = JUDGE + [
        "--cache",
        str(tmp_path / "c.sqlite"),
        "-o",
        str(tmp_path / "b.jsonl"),
        "--coverage-out",
        str(tmp_path / "b_cov.jsonl"),
    ]
    rounds, requests = _rounds(argv, tmp_path)
    assert rounds == 4  # relevance, then coverage's three steps (nuggets, importance, assignment)
    assert requests == live_calls  # every live call exactly once, nothing twice
    assert _records(tmp_path / "b.jsonl") == _records(tmp_path / "live.jsonl")
    assert _records(tmp_path / "b_cov.jsonl") == _records(tmp_path / "live_cov.jsonl")


def test_request_lines_are_the_live_requests(tmp_path, monkeypatch):
    """custom_id is the call's cache key; the body is exactly what the live path posts."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM() as server:
        assert main(JUDGE + ["-o", str(tmp_path / "live.jsonl"), "--no-cache", "--base-url", server.url]) == 0
        sent = server.requests
    req = tmp_path / "req.jsonl"
    assert main(JUDGE + ["-o", str(tmp_path / "b.jsonl"), "--no-cache", "--export-requests", str(req)]) == 0
    lines = [json.loads(x) for x in req.read_text().splitlines()]
    assert len({x["custom_id"] for x in lines}) == len(lines) == len(sent)
    assert all(x["method"] == "POST" and x["url"] == "/v1/chat/completions" for x in lines)
    key = lambda b: json.dumps(b, sort_keys=True)  # noqa: E731
    assert sorted(key(x["body"]) for x in lines) == sorted(key(b) for b in sent)
    assert not (tmp_path / "b.jsonl").exists() or not (tmp_path / "b.jsonl").read_text().strip()  # items wait


def test_error_lines_become_error_records_and_a_rerun_retries_them(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "b.jsonl"
    argv = JUDGE + ["--cache", str(tmp_path / "c.sqlite"), "-o", str(out)]
    req = tmp_path / "req.jsonl"
    assert main(argv + ["--export-requests", str(req)]) == 0
    first = json.loads(req.read_text().splitlines()[0])["custom_id"]
    run_batch(
        req, tmp_path / "out.jsonl", fail=lambda line: "the GPU fell over" if line["custom_id"] == first else None
    )
    capsys.readouterr()
    assert (
        main(argv + ["--import-results", str(tmp_path / "out.jsonl"), "--export-requests", str(tmp_path / "r2.jsonl")])
        == 3
    )
    errors = [r for r in _records(out) if r["status"] == "error"]
    assert (
        len(errors) == 1
        and "batch: the batch returned no answer for this call (server_error: the GPU fell over)" in errors[0]["error"]
    )
    assert "1 of 66 judge records are errors" in capsys.readouterr().out
    # the rerun exports the failed call again (an error record is redone), and nothing else; until
    # its answer is in, the error record stays and says so (exit 3)
    assert main(argv + ["--export-requests", str(tmp_path / "r3.jsonl")]) == 3
    assert [json.loads(x)["custom_id"] for x in (tmp_path / "r3.jsonl").read_text().splitlines()] == [first]


def test_an_unusable_answer_in_a_batch_is_an_error_record_not_a_grade(tmp_path, monkeypatch):
    argv = JUDGE + ["--no-cache", "-o", str(tmp_path / "b.jsonl")]
    req = tmp_path / "req.jsonl"
    assert main(argv + ["--export-requests", str(req)]) == 0
    run_batch(req, tmp_path / "out.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    lines[0]["response"]["body"]["choices"][0]["message"]["content"] = '{"grade": 7}'
    lines[1]["response"]["body"]["choices"][0]["finish_reason"] = "length"
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert (
        main(argv + ["--import-results", str(tmp_path / "out.jsonl"), "--export-requests", str(tmp_path / "r2.jsonl")])
        == 3
    )
    reasons = sorted(r["error"].split(":")[0] for r in _records(tmp_path / "b.jsonl") if r["status"] == "error")
    assert reasons == ["invalid", "truncated"]


def test_check_through_a_batch_engine(tmp_path, monkeypatch):
    argv = [
        "check",
        str(EXAMPLE / "answers.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--model",
        "m",
        "--quiet",
    ]
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM() as server:
        assert main(argv + ["-o", str(tmp_path / "live.jsonl"), "--no-cache", "--base-url", server.url]) == 0
        live_calls = server.calls
    monkeypatch.delenv("OPENAI_API_KEY")
    rounds, requests = _rounds(
        argv + ["--cache", str(tmp_path / "c.sqlite"), "-o", str(tmp_path / "b.jsonl")], tmp_path
    )
    assert (rounds, requests) == (1, live_calls)
    assert _records(tmp_path / "b.jsonl") == _records(tmp_path / "live.jsonl")


def test_generate_through_a_batch_engine_makes_the_live_set(tmp_path, monkeypatch):
    argv = ["generate", str(EXAMPLE / "chunks.jsonl"), "--limit", "4", "--model", "m", "--quiet", "--seed", "3"]
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM() as server:
        assert (
            main(
                argv
                + [
                    "-o",
                    str(tmp_path / "live.jsonl"),
                    "--rejects",
                    str(tmp_path / "lr.jsonl"),
                    "--no-cache",
                    "--base-url",
                    server.url,
                ]
            )
            == 0
        )
        live_calls = server.calls
    monkeypatch.delenv("OPENAI_API_KEY")
    _, requests = _rounds(
        argv
        + [
            "--cache",
            str(tmp_path / "c.sqlite"),
            "-o",
            str(tmp_path / "b.jsonl"),
            "--rejects",
            str(tmp_path / "br.jsonl"),
        ],
        tmp_path,
    )
    assert requests == live_calls
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "live.jsonl").read_text()
    assert (tmp_path / "br.jsonl").read_text() == (tmp_path / "lr.jsonl").read_text()


def test_large_exports_are_split_under_the_batch_limits(tmp_path):
    lines = [
        {"custom_id": f"k{i}", "method": "POST", "url": "/v1/chat/completions", "body": {"x": "y" * 50}}
        for i in range(25)
    ]
    files = write_requests(tmp_path / "req.jsonl", lines, max_lines=10)
    assert [f.name for f in files] == ["req.jsonl", "req.2.jsonl", "req.3.jsonl"]
    assert [len(f.read_text().splitlines()) for f in files] == [10, 10, 5]
    files = write_requests(tmp_path / "big.jsonl", lines, max_bytes=400)
    assert all(f.stat().st_size <= 400 for f in files) and sum(len(f.read_text().splitlines()) for f in files) == 25


def test_a_bad_output_file_names_its_line(tmp_path, capsys):
    bad = tmp_path / "out.jsonl"
    bad.write_text('{"custom_id": "a", "response": {"status_code": 200, "body": {}}}\n{"response": {}}\n')
    assert (
        main(
            JUDGE
            + [
                "-o",
                str(tmp_path / "b.jsonl"),
                "--import-results",
                str(bad),
                "--export-requests",
                str(tmp_path / "r.jsonl"),
            ]
        )
        == 1
    )
    assert f"{bad}:2: each line needs a custom_id" in capsys.readouterr().err


@pytest.mark.parametrize("n", [2, 3])
def test_shards_partition_the_plan_and_merge_back(tmp_path, monkeypatch, n, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM() as server:
        base = JUDGE + ["--no-cache", "--base-url", server.url]
        assert main(base + ["-o", str(tmp_path / "all.jsonl")]) == 0
        parts = []
        for i in nonempty(range(1, n + 1)):
            part = tmp_path / f"part{i}.jsonl"
            assert main(base + ["-o", str(part), "--shard", f"{i}/{n}"]) == 0
            parts.append(part)
    keys = [{r["key"] for r in _records(p)} for p in parts]
    assert (
        sum(len(k) for k in keys) == len(set().union(*keys)) == len(_records(tmp_path / "all.jsonl"))
    )  # disjoint, complete
    queries = [{r["query_id"] for r in _records(p)} for p in parts]
    assert sum(len(q) for q in queries) == len(set().union(*queries))  # a query lives on one shard
    capsys.readouterr()
    assert main(["merge", *map(str, parts), "-o", str(tmp_path / "merged.jsonl")]) == 0
    assert _records(tmp_path / "merged.jsonl") == _records(tmp_path / "all.jsonl")


def test_merge_reports_conflicts(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"key": "k1", "query_id": "q", "chunk_id": "c", "grade": 2, "status": "ok"}) + "\n")
    b.write_text(
        json.dumps({"key": "k1", "query_id": "q", "chunk_id": "c", "grade": 3, "status": "ok"})
        + "\n"
        + json.dumps({"key": "k2", "query_id": "q", "chunk_id": "d", "grade": 0, "status": "ok"})
        + "\n"
    )
    assert main(["merge", str(a), str(b), "-o", str(tmp_path / "m.jsonl")]) == 3
    out = capsys.readouterr()
    assert "1 key has different records in different files" in out.out + out.err and "k1" in out.out + out.err
    assert len(_records(tmp_path / "m.jsonl")) == 2


def test_bad_shard_is_a_usage_error(capsys):
    assert main(JUDGE + ["-o", os.devnull, "--shard", "5/4"]) == 2
    assert "--shard takes i/n with 1 <= i <= n" in capsys.readouterr().err


# --------------------------------------------------------------------------- the Batch API itself

import httpx  # noqa: E402
import respx  # noqa: E402

from fake_llm import reply_to  # noqa: E402

BASE = "https://batch.test/v1"


class BatchAPIStub:
    """The Files and Batches routes of the OpenAI API, answering with the fake model. ``plan`` says
    how each new batch ends: "completed", "failed", "expired" (half answered), "cancelled";
    ``polls`` is how many status checks say in_progress first; ``fail`` makes error lines."""

    def __init__(self, mock: respx.MockRouter, plan=("completed",), polls: int = 1, fail=lambda line: None):
        self.plan, self.polls, self.fail = list(plan), polls, fail
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.created = 0
        self.retrieves = 0
        mock.post(f"{BASE}/files").mock(side_effect=self.upload)
        mock.post(f"{BASE}/batches").mock(side_effect=self.create)
        mock.get(url__regex=rf"{BASE}/batches/[^/]+$").mock(side_effect=self.retrieve)
        mock.get(url__regex=rf"{BASE}/files/[^/]+/content$").mock(side_effect=self.content)

    def upload(self, request: httpx.Request) -> httpx.Response:
        body = request.content
        lines = [x for x in body.split(b"\r\n") if x.startswith(b'{"custom_id"')]
        assert lines, "the upload holds request lines"
        fid = f"file-in-{sum(1 for k in self.files if k.startswith('file-in')) + 1}"
        self.files[fid] = b"".join(lines)
        return httpx.Response(
            200,
            json={
                "id": fid,
                "object": "file",
                "bytes": len(body),
                "created_at": 0,
                "filename": "x.jsonl",
                "purpose": "batch",
                "status": "processed",
            },
        )

    def create(self, request: httpx.Request) -> httpx.Response:
        args = json.loads(request.content)
        assert args["endpoint"] == "/v1/chat/completions" and args["completion_window"] == "24h"
        self.created += 1
        bid = f"batch_{self.created}"
        self.batches[bid] = {
            "input": args["input_file_id"],
            "end": self.plan.pop(0) if self.plan else "completed",
            "polls": self.polls,
        }
        return httpx.Response(200, json=self._batch(bid, "validating"))

    def _batch(self, bid: str, status: str, **extra) -> dict:
        return {
            "id": bid,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "input_file_id": self.batches[bid]["input"],
            "status": status,
            "created_at": 0,
            **extra,
        }

    def retrieve(self, request: httpx.Request) -> httpx.Response:
        self.retrieves += 1
        bid = request.url.path.rsplit("/", 1)[1]
        b = self.batches[bid]
        lines = [json.loads(x) for x in self.files[b["input"]].splitlines()]
        if b["polls"] > 0:
            b["polls"] -= 1
            return httpx.Response(
                200,
                json=self._batch(bid, "in_progress", request_counts={"total": len(lines), "completed": 0, "failed": 0}),
            )
        if b["end"] == "failed":
            return httpx.Response(
                200,
                json=self._batch(
                    bid,
                    "failed",
                    errors={
                        "object": "list",
                        "data": [
                            {
                                "code": "invalid_json_line",
                                "message": "This line is not parseable as valid JSON.",
                                "line": 3,
                            }
                        ],
                    },
                ),
            )
        answered = lines if b["end"] == "completed" else lines[: len(lines) // 2]
        out, err = [], []
        for i, line in enumerate(answered):
            why = self.fail(line)
            if why:
                err.append(
                    {
                        "id": f"r{i}",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": 500, "request_id": f"q{i}", "body": {"error": {"message": why}}},
                        "error": None,
                    }
                )
            else:
                out.append(
                    {
                        "id": f"r{i}",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "request_id": f"q{i}", "body": reply_to(line["body"])},
                        "error": None,
                    }
                )
        if b["end"] == "expired":  # the Batch API lists expired requests in the error file
            err += [
                {
                    "id": f"x{i}",
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {
                        "code": "batch_expired",
                        "message": "This request could not be executed before the completion window expired.",
                    },
                }
                for i, line in enumerate(lines[len(answered) :])
            ]
        self.files[f"{bid}-out"] = "".join(json.dumps(x) + "\n" for x in out).encode()
        extra = {
            "output_file_id": f"{bid}-out",
            "request_counts": {"total": len(lines), "completed": len(out), "failed": len(err)},
        }
        if err:
            self.files[f"{bid}-err"] = "".join(json.dumps(x) + "\n" for x in err).encode()
            extra["error_file_id"] = f"{bid}-err"
        return httpx.Response(200, json=self._batch(bid, b["end"], **extra))

    def content(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=self.files[request.url.path.split("/")[-2]])


CHECK = ["check", str(EXAMPLE / "answers.jsonl"), "--chunks", str(EXAMPLE / "chunks.jsonl"), "--model", "m", "--quiet"]


def _batch_argv(tmp_path: Path, argv=None) -> list[str]:
    return (argv or JUDGE) + [
        "--base-url",
        BASE,
        "--backend",
        "batch",
        "--poll-seconds",
        "0.001",
        "--cache",
        str(tmp_path / "c.sqlite"),
        "-o",
        str(tmp_path / "b.jsonl"),
    ]


def test_the_batch_api_backend_writes_the_live_records_and_a_rerun_sends_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeLLM() as server:
        assert (
            main(
                JUDGE
                + [
                    "-o",
                    str(tmp_path / "live.jsonl"),
                    "--coverage-out",
                    str(tmp_path / "live_cov.jsonl"),
                    "--no-cache",
                    "--base-url",
                    server.url,
                ]
            )
            == 0
        )
    argv = _batch_argv(tmp_path) + ["--coverage-out", str(tmp_path / "b_cov.jsonl")]
    capsys.readouterr()
    assert main(argv + ["--dry-run", "--format", "json"]) == 0
    predicted = json.loads(capsys.readouterr().out)["batch"]
    with respx.mock(assert_all_called=False) as mock:
        stub = BatchAPIStub(mock, polls=2)
        assert main(argv) == 0
        assert stub.created == 4  # one batch per step: relevance, then coverage's three
        sent = [len(stub.files[f"file-in-{i}"].splitlines()) for i in range(1, 5)]
        assert predicted["requests_per_round"] == sent == [66, 22, 22, 22]  # the dry run foresaw every round
        assert predicted["rounds"] == 4 and predicted["batches_per_round"] == [1, 1, 1, 1]
        assert "batch backend: 4 round(s)" in capsys.readouterr().out
        assert _records(tmp_path / "b.jsonl") == _records(tmp_path / "live.jsonl")
        assert _records(tmp_path / "b_cov.jsonl") == _records(tmp_path / "live_cov.jsonl")
        calls = len(mock.calls)
        assert main(argv) == 0  # done: nothing is uploaded, created or polled again
        assert len(mock.calls) == calls


def test_a_killed_batch_run_resumes_its_batch_instead_of_paying_for_a_second(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as mock:
        stub = BatchAPIStub(mock, polls=1000)

        async def killed(_):
            raise KeyboardInterrupt  # the user presses Ctrl-C while the batch is in progress

        import ragassay.llm.batch_api as api

        monkeypatch.setattr(api.asyncio, "sleep", killed)
        assert main(_batch_argv(tmp_path, CHECK)) == 130  # "interrupted; a rerun ... resumes"
        assert stub.created == 1
        state = json.loads((tmp_path / "b.jsonl.batches.json").read_text())
        assert state[0]["batches"][0]["id"] == "batch_1"
        monkeypatch.undo()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        stub.batches["batch_1"]["polls"] = 0
        assert main(_batch_argv(tmp_path, CHECK)) == 0
        assert stub.created == 1  # the same batch, resumed
    assert all(r["status"] == "ok" for r in _records(tmp_path / "b.jsonl"))


@pytest.mark.parametrize(
    "end, reason", [("expired", "batch_expired"), ("cancelled", "missing: the batch returned no line")]
)
def test_expired_and_cancelled_batches_leave_error_records_that_a_rerun_sends_again(tmp_path, monkeypatch, end, reason):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as mock:
        BatchAPIStub(mock, plan=(end,))
        assert main(_batch_argv(tmp_path, CHECK)) == 3
        recs = _records(tmp_path / "b.jsonl")
        failed = [r for r in recs if r["status"] == "error"]
        assert failed and all(reason in r["error"] for r in failed)
        assert any(r["status"] == "ok" and r["decided_by"] == "llm" for r in recs)  # the answered half is kept
    with respx.mock(assert_all_called=False) as mock:  # the rerun sends those again, and only those
        stub = BatchAPIStub(mock, plan=("completed",))
        assert main(_batch_argv(tmp_path, CHECK)) == 0
        assert stub.created == 1 and len(stub.files["file-in-1"].splitlines()) == len(failed)


def test_error_lines_of_a_completed_batch_become_error_records(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as mock:
        BatchAPIStub(mock, fail=lambda line: "overloaded")
        assert main(_batch_argv(tmp_path, CHECK)) == 3  # every LLM verdict failed; the rules' verdicts stand
    errors = [r for r in _records(tmp_path / "b.jsonl") if r["status"] == "error"]
    assert errors and all("status 500: overloaded" in r["error"] for r in errors)


def test_a_failed_batch_is_one_clear_error_and_a_rerun_makes_a_new_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as mock:
        stub = BatchAPIStub(mock, plan=("failed", "completed"), polls=0)
        assert main(_batch_argv(tmp_path, CHECK)) == 1
        err = capsys.readouterr().err
        assert "batch batch_1 failed: invalid_json_line: This line is not parseable as valid JSON. (line 3)" in err
        assert "Traceback" not in err
        assert main(_batch_argv(tmp_path, CHECK)) == 0
        assert stub.created == 2


def test_a_large_round_is_split_into_several_batches(tmp_path, monkeypatch):
    import ragassay.llm.batch_api as api

    monkeypatch.setitem(api.LIMITS, "lines", 5)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as mock:
        stub = BatchAPIStub(mock)
        assert main(_batch_argv(tmp_path, CHECK)) == 0
    sizes = sorted(len(v.splitlines()) for k, v in stub.files.items() if k.startswith("file-in"))
    assert max(sizes) <= 5 and stub.created == len(sizes) > 1


# vLLM's BatchRequestInput (vllm/entrypoints/openai/protocol.py): custom_id, method, url, body; the
# body a ChatCompletionRequest. These are the body fields ragassay sends, all of them fields of both
# vLLM's ChatCompletionRequest and the OpenAI chat completions API.
CHAT_REQUEST_FIELDS = {"model", "messages", "temperature", "max_tokens", "seed", "response_format"}


def test_request_lines_have_the_shape_vllm_run_batch_reads(tmp_path):
    req = tmp_path / "req.jsonl"
    assert (
        main(
            [
                "check",
                str(EXAMPLE / "answers.jsonl"),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "--model",
                "m",
                "--no-cache",
                "-o",
                str(tmp_path / "c.jsonl"),
                "--samples",
                "2",
                "--export-requests",
                str(req),
            ]
        )
        == 0
    )
    lines = [json.loads(x) for x in req.read_text().splitlines()]
    assert lines
    for line in nonempty(lines):
        assert set(line) == {"custom_id", "method", "url", "body"}
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert set(line["body"]) <= CHAT_REQUEST_FIELDS and {"model", "messages"} <= set(line["body"])
        assert all(
            set(m) == {"role", "content"} and m["role"] in ("system", "user", "assistant")
            for m in line["body"]["messages"]
        )
        fmt = line["body"]["response_format"]
        assert fmt["type"] == "json_schema" and {"name", "schema", "strict"} == set(fmt["json_schema"])
    # two samples of one answer are two distinct requests: own custom_id, own seed (0 and 1)
    assert len({x["custom_id"] for x in lines}) == len(lines)
    assert len({json.dumps(x["body"], sort_keys=True) for x in lines}) == len(lines)
    bodies = {}
    for x in lines:
        body = dict(x["body"])
        bodies.setdefault(json.dumps({k: v for k, v in body.items() if k != "seed"}, sort_keys=True), []).append(
            body["seed"]
        )
    assert all(sorted(seeds) == [0, 1] for seeds in bodies.values())


def test_generate_with_the_batch_api_backend(tmp_path, monkeypatch):
    argv = ["generate", str(EXAMPLE / "chunks.jsonl"), "--limit", "3", "--model", "m", "--quiet", "--seed", "5"]
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM() as server:
        assert main(argv + ["-o", str(tmp_path / "live.jsonl"), "--no-cache", "--base-url", server.url]) == 0
        live_calls = server.calls
    with respx.mock(assert_all_called=False) as mock:
        stub = BatchAPIStub(mock, polls=0)
        assert main(_batch_argv(tmp_path, argv)) == 0
    sent = sum(len(v.splitlines()) for k, v in stub.files.items() if k.startswith("file-in"))
    assert sent == live_calls and stub.created > 1  # one round per step of the candidates
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "live.jsonl").read_text()


def test_the_batch_backend_against_a_dead_endpoint_or_one_without_a_batch_api(tmp_path, monkeypatch, capsys):
    from fake_llm import dead_url

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = CHECK + ["--backend", "batch", "--poll-seconds", "0.001", "--no-cache", "-o", str(tmp_path / "b.jsonl")]
    assert main(argv + ["--base-url", dead_url(), "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert "could not reach the Batch API at http://127.0.0.1:" in err and "Traceback" not in err
    with respx.mock(assert_all_called=False) as mock:  # a vLLM server: chat completions, but no /files
        mock.post(f"{BASE}/files").mock(return_value=httpx.Response(404, json={"error": {"message": "Not Found"}}))
        assert main(argv + ["--base-url", BASE]) == 1
    err = capsys.readouterr().err
    assert "answered 404; this endpoint has no Files/Batches API" in err and "vllm run-batch" in err


def test_pairs_a_batched_answer_missed_are_asked_alone_in_the_next_round(tmp_path, monkeypatch, capsys):
    """The fallback of a batched judgment is part of the plan: an export backend defers it to the
    next round like any other call (nothing is called live from inside a batch run)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    argv = JUDGE + ["--batch", "3", "--cache", str(tmp_path / "c.sqlite"), "-o", str(tmp_path / "b.jsonl")]
    imports: list[str] = []
    sizes = []
    for rnd in range(1, 6):
        req = tmp_path / f"req{rnd}.jsonl"
        assert main(argv + ["--export-requests", str(req)] + [x for f in imports for x in ("--import-results", f)]) in (
            0,
            3,
        )
        if not req.exists():
            break
        out = tmp_path / f"out{rnd}.jsonl"
        sizes.append(run_batch(req, out))
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        for line in lines:  # every batched answer leaves out its last pair
            message = line["response"]["body"]["choices"][0]["message"]
            answer = json.loads(message["content"])
            if "judgments" in answer:
                answer["judgments"] = answer["judgments"][:-1]
                message["content"] = json.dumps(answer)
        out.write_text("".join(json.dumps(x) + "\n" for x in lines))
        imports = [str(out)]
    records = _records(tmp_path / "b.jsonl")
    batches = sizes[0]
    assert len(sizes) == 2 and sizes[1] == batches  # round 2: one pair alone per batch, then done
    alone = [r for r in records if r["prompt"].startswith("judge_relevance@")]
    assert len(alone) == batches and all(r["status"] == "ok" for r in records)
    assert len(records) == len({(r["query_id"], r["chunk_id"]) for r in records})


def test_answers_through_the_batch_api_are_priced_at_the_batch_rate(tmp_path, monkeypatch, capsys):
    """A batch run's cost is the Batch API's (half the live price), not the live price, in the summary
    and in the numbers, and the dry run had said the same."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = [a if a != "m" else "gpt-4o-mini" for a in _batch_argv(tmp_path)] + ["--format", "json"]
    with respx.mock(assert_all_called=False) as mock:
        BatchAPIStub(mock, polls=0)
        assert main(argv) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]["gpt-4o-mini"]
    assert usage["prompt_tokens"] > 0 and usage["batch_prompt_tokens"] == usage["prompt_tokens"]
    live = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
    assert usage["cost_usd"] == pytest.approx(live / 2)

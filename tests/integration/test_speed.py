"""A model's speed, measured by ping on a server people run themselves, and a dry run's time from it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm import FakeLLM  # noqa: E402
from helpers import EXAMPLE, nonempty  # noqa: E402
from helpers import cli as run_cli  # noqa: E402
from ragassay.llm.cache import Cache, endpoint_id  # noqa: E402
from ragassay.llm.speed import Speed, Timed, duration, passage, solve  # noqa: E402


def _timed(speed: Speed, sizes: list[tuple[int, int]]) -> list[Timed]:
    return [Timed(p, a, speed.seconds(1, p, a)) for p, a in sizes]


@pytest.mark.parametrize("speed", [Speed(54.0, 9.0, 0.4), Speed(2500.0, 80.0, 0.05), Speed(300.0, 100.0, 0.0)])
def test_three_timed_calls_give_back_the_speeds_that_made_them(speed):
    got = solve(_timed(speed, [(60, 12), (700, 12), (60, 50)]))
    assert got is not None and type(got.prompt_per_second) is float and type(got.seconds_per_call) is float
    assert got.prompt_per_second == pytest.approx(speed.prompt_per_second, rel=1e-3)
    assert got.answer_per_second == pytest.approx(speed.answer_per_second, rel=1e-3)
    assert got.seconds_per_call == pytest.approx(speed.seconds_per_call, abs=0.01)


@pytest.mark.parametrize(
    "calls",
    [
        [Timed(60, 12, 1.0), Timed(60, 12, 1.1), Timed(60, 12, 0.9)],  # equal sizes: nothing tells the speeds apart
        [Timed(60, 12, 1.0), Timed(700, 12, 0.5), Timed(60, 50, 2.0)],  # more to read, yet faster: noise
        [Timed(60, 12, 1.0), Timed(700, 12, 3.0)],  # two calls for three unknowns
        [Timed(60, 12, 0.01), Timed(700, 12, 0.012), Timed(60, 50, 0.009)],  # answered at once: writing is "free"
        [Timed(60, 12, 0.02), Timed(700, 12, 0.21), Timed(60, 50, 0.15)],  # a stub on a busy machine: only noise
    ],
)
def test_timings_that_cannot_tell_the_speeds_give_no_figure(calls):
    assert solve(calls) is None


def test_the_passage_differs_from_one_ping_to_the_next_from_its_first_words():
    a, b = passage(1), passage(2)
    assert a[:12] != b[:12] and len(a) > 500 and len(b) > 500  # no server serves it from an earlier prompt's start


@pytest.mark.parametrize(
    "seconds, said",
    [(0.4, "0 s"), (42, "42 s"), (89, "89 s"), (95, "2 min"), (3600, "60 min"), (5400, "1.5 h"), (36000, "10.0 h")],
)
def test_a_duration_is_as_precise_as_an_estimate_deserves(seconds, said):
    assert duration(seconds) == said


def test_ping_measures_a_local_servers_speed_and_keeps_it_for_dry_runs(tmp_path, monkeypatch):
    from ragassay.llm.config import default_cache_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = default_cache_path()  # ping keeps what it finds in the default answer cache
    with FakeLLM(pace=(400.0, 20.0, 0.1)) as server:  # each measuring call differs by 1 s or more
        said = run_cli("ping", "--base-url", server.url, "--model", "m", "--format", "json")
        requests = list(server.requests)
    assert said.code == 0, said.text
    report = json.loads(said.out)
    assert report["prompt_tokens_per_second"] == pytest.approx(400, rel=0.25)
    assert report["answer_tokens_per_second"] == pytest.approx(20, rel=0.25)
    assert report["seconds_per_call"] == pytest.approx(0.1, abs=0.08)
    assert report["speed_note"] is None
    assert len(requests) == 4  # the check, then three measuring calls
    assert requests[2]["messages"][0]["role"] == "system" and "Background text" in requests[2]["messages"][0]["content"]
    assert "lanternfish lanternfish" in requests[3]["messages"][-1]["content"]
    kept = Cache(cache).get_speed(endpoint_id(server.url), "m")
    assert kept is not None and kept.prompt_per_second == report["prompt_tokens_per_second"]
    assert kept.answer_per_second == report["answer_tokens_per_second"]


def test_ping_of_a_hosted_api_makes_one_call_and_measures_nothing(tmp_path):
    import httpx
    import respx

    answer = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": '{"ok": true, "echo": "lanternfish"}'},
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
    }
    with respx.mock:
        route = respx.post("https://api.example.com/v1/chat/completions").mock(
            return_value=httpx.Response(200, json=answer)
        )
        said = run_cli(
            "ping",
            "--base-url",
            "https://api.example.com/v1",
            "--model",
            "m",
            "--format",
            "json",
            env={"OPENAI_API_KEY": "sk-test"},
        )
    assert said.code == 0, said.text
    report = json.loads(said.out)
    assert route.call_count == 1 and report["prompt_tokens_per_second"] is None and report["speed_note"] is None


def _dry_run(tmp_path: Path, url: str, cache: Path | None, *extra: str) -> dict:
    args = [
        "judge",
        "--run",
        str(EXAMPLE / "runs" / "bm25.txt"),
        "--queries",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "-o",
        str(tmp_path / "j.jsonl"),
        "--base-url",
        url,
        "--model",
        "m",
        "--dry-run",
        *extra,
    ]
    args += ["--cache", str(cache)] if cache is not None else ["--no-cache"]
    said = run_cli(*args, "--format", "json", env={"OPENAI_API_KEY": "sk-test"})
    assert said.code == 0, said.text
    text = run_cli(*args, env={"OPENAI_API_KEY": "sk-test"})
    return {**json.loads(said.out), "text": text.out}


def test_a_dry_run_says_the_time_at_the_measured_speed(tmp_path):
    cache = tmp_path / "cache.sqlite"
    speed = Speed(54.0, 9.0, 0.4, measured=1_790_000_000.0)
    url = "http://127.0.0.1:8080/v1"
    store = Cache(cache)
    store.put_speed(endpoint_id(url), "m", speed)
    store.close()
    est = _dry_run(tmp_path, url, cache)
    assert est["calls"] > 0
    high = speed.seconds(est["calls"], est["input_tokens"], est["output_tokens"])
    # the least: each prompt's start shared with the call before is not read again (llama.cpp keeps it): the
    # judge's prompts share their instructions, and a query's pairs its question too
    assert 0.1 * est["input_tokens"] < est["input_tokens_unshared"] < 0.6 * est["input_tokens"]
    low = speed.seconds(est["calls"], est["input_tokens_unshared"], est["output_tokens_expected"])
    assert est["seconds_high"] == pytest.approx(high, abs=0.06) and est["seconds_low"] == pytest.approx(low, abs=0.06)
    assert est["seconds_low"] < est["seconds_high"]  # the answers' tokens are not known yet: a range
    (line,) = [x for x in est["text"].splitlines() if x.startswith("time:")]
    assert f"time: {duration(low)} to {duration(high)}, one call at a time" in line
    assert "each prompt's start shared with the one before kept by the server" in line
    assert "54 prompt and 9.0 answer tokens a second" in line and "measured by ping on 2026-" in line


def test_a_dry_run_against_an_unmeasured_local_server_says_how_to_measure_and_a_hosted_api_says_nothing(tmp_path):
    local = _dry_run(tmp_path, "http://127.0.0.1:8080/v1", tmp_path / "c.sqlite")
    assert local["seconds_high"] is None and local["speed_unmeasured"] == ["m"]
    (line,) = [x for x in local["text"].splitlines() if x.startswith("time:")]
    assert "never measured" in line and "ragassay ping" in line
    hosted = _dry_run(tmp_path, "https://api.example.com/v1", tmp_path / "c.sqlite")
    assert hosted["seconds_high"] is None and hosted["speed_unmeasured"] is None
    assert not any(x.startswith("time:") for x in nonempty(hosted["text"].splitlines()))


def test_a_speed_measured_for_another_model_or_endpoint_is_not_used(tmp_path):
    cache = tmp_path / "cache.sqlite"
    store = Cache(cache)
    store.put_speed(endpoint_id("http://127.0.0.1:8080/v1"), "other-model", Speed(54.0, 9.0, 0.4))
    store.put_speed(endpoint_id("http://127.0.0.1:9090/v1"), "m", Speed(54.0, 9.0, 0.4))
    store.close()
    est = _dry_run(tmp_path, "http://127.0.0.1:8080/v1", cache)
    assert est["seconds_high"] is None and est["speed_unmeasured"] == ["m"]


def test_the_unshared_part_of_a_prompt_is_counted_from_where_it_differs_from_the_call_before(tmp_path):
    """Two queries, two passages each: the estimate's unshared tokens are the first prompt whole, then
    what follows the shared start of each next one (the fake's prompts are built the same way)."""
    from ragassay.llm.speed import Speed
    from ragassay.runtime.engine import Estimate

    est = Estimate()
    from ragassay.runtime.engine import estimates as engine

    first = ["system", "Instructions " * 100, "user", "QUERY one PASSAGE alpha"]
    same_start = ["system", "Instructions " * 100, "user", "QUERY one PASSAGE beta and more"]
    other = ["system", "Other instructions", "user", "x"]
    assert engine._fresh(est, 0, first, 400) == 400  # nothing before it
    total = sum(map(len, same_start))
    shared = len("system") + len("Instructions " * 100) + len("user") + len("QUERY one PASSAGE ")
    assert engine._fresh(est, 0, same_start, 400) == round(400 * (1 - shared / total))
    assert engine._fresh(est, 1, first, 50) == 50  # another model: its own call before
    assert engine._fresh(est, 0, other, 30) == round(30 * (1 - len("system") / sum(map(len, other))))
    assert Speed(10.0, 5.0, 1.0).seconds(2, 100, 10) == 2 + 10 + 2


def test_a_dry_run_without_the_answer_cache_still_reads_the_measured_speed(tmp_path, monkeypatch):
    from ragassay.llm.config import default_cache_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    url = "http://127.0.0.1:8080/v1"
    default_cache_path().parent.mkdir(parents=True)
    store = Cache(default_cache_path())
    store.put_speed(endpoint_id(url), "m", Speed(54.0, 9.0, 0.4))
    store.close()
    est = _dry_run(tmp_path, url, None)  # --no-cache: no answer is looked up, the speed is
    assert est["cached"] == 0 and est["seconds_high"] is not None and est["seconds_low"] is not None

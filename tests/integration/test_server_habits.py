"""Every LLM stage (judge with coverage, check with the diagnosis, generate) against every habit of
the servers people run (tests/fake_llm.py's ``HABITS``, each read from that server's own code), as a
user runs them: through the CLI, with ``--base-url`` and ``--model`` and a key in the environment.

What ragassay promises against them:
1. a refused response format (400, 422, 500 or 501 naming it) moves to the next mode: json_schema,
   json_object carrying the schema, json_object, instructions alone; each mode tried at most once,
   never on a context refusal; the mode that worked is remembered per endpoint and model in the
   answer cache once a call in it succeeds, and a later run's first request uses it; ping says it;
2. answers are read as small models write them (JSON in prose or a fence, reasoning as lists), while
   decisions stay strict; a re-ask whose reply repeats an earlier one byte for byte is not sent;
3. a server that read under half the prompt cut it: an error record of kind cut, never a label;
4. a 400 naming the context: an error record of kind context, and a prompt well over it is not sent;
5. no usage in the replies changes nothing.

The benign habits must give the records an OpenAI-like server gives; the cut and context habits
error records naming the cause, exit 1 (nothing succeeded) or 3. The requests the server saw are
compared as well (their modes and counts). Runs use ``--concurrency 1`` where the exact sequence of
requests is asserted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE, cli, nonempty

STAGES = ("judge", "check", "generate")
BENIGN = ("llama_cpp_python", "vllm_400", "tgi_422", "prose", "loose_reasoning", "no_usage", "loose_decisions")
# the response formats each habit refuses, in the order ragassay tries them, with the server's status
REFUSED = {
    "llama_cpp_python": [("json_schema", 500)],
    "vllm_400": [("json_schema", 400)],
    "tgi_422": [("json_schema", 422), ("json_object_schema", 422), ("json_object", 422)],
}
FINAL_MODE = {"llama_cpp_python": "json_object_schema", "vllm_400": "json_object_schema", "tgi_422": "prompt"}
DECIDING = {"RelevanceAnswer", "AnswerVerdict", "Critique"}  # the schemas loose_decisions writes loosely
SCHEMA_SAYS = "JSON schema:\n"


# ----------------------------------------------------------------------------------------- helpers


OWN_CACHE = Path("cache.sqlite")


def stage_args(
    stage: str,
    out: Path,
    url: str,
    *extra: object,
    answers: Path | None = None,
    model: str = "m",
    cache: Path | None = OWN_CACHE,
) -> list[object]:
    """The stage on the bundled example, into ``out``, asking the server at ``url``, with the answer
    cache ``out/cache.sqlite`` (or ``cache``; None: the default cache, where ping keeps what it found)."""
    out.mkdir(parents=True, exist_ok=True)
    if stage == "judge":
        args: list[object] = [
            "judge",
            "--queries",
            EXAMPLE / "queries.jsonl",
            "--chunks",
            EXAMPLE / "chunks.jsonl",
            "--run",
            EXAMPLE / "runs" / "bm25.txt",
            "--depth",
            "2",
            "-o",
            out / "judgments.jsonl",
            "--coverage-out",
            out / "coverage.jsonl",
        ]
    elif stage == "check":
        args = [
            "check",
            answers or EXAMPLE / "answers.jsonl",
            "--chunks",
            EXAMPLE / "chunks.jsonl",
            "--run",
            EXAMPLE / "runs" / "bm25.txt",
            "--qrels",
            EXAMPLE / "qrels.txt",
            "-o",
            out / "checks.jsonl",
        ]
    else:
        args = ["generate", EXAMPLE / "chunks.jsonl", "-o", out / "questions.jsonl", "--limit", "3"]
    if cache is not None:
        args += ["--cache", out / cache if cache == OWN_CACHE else cache]
    return args + ["--base-url", url, "--model", model] + list(extra)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def decisions(stage: str, out: Path) -> dict:
    """What a stage decided, without its wording: the grades and coverage of judge, the labels of
    check, the questions of generate."""
    if stage == "judge":
        grades = {(r["query_id"], r["chunk_id"]): (r["status"], r["grade"]) for r in lines(out / "judgments.jsonl")}
        coverage = {
            r["query_id"]: (
                r["status"],
                r["coverage"],
                [(n["text"], n["vital"], n.get("support")) for n in r["nuggets"]],
            )
            for r in lines(out / "coverage.jsonl")
        }
        return {"grades": grades, "coverage": coverage}
    if stage == "check":
        return {
            r["id"]: (r["status"], r["label"], r["grounded"], r["fault"], r["unsupported_claims"])
            for r in lines(out / "checks.jsonl")
        }
    return {
        r["id"]: (r["question"], r["answer"], r["difficulty"], r["kind"], r["style"], r["chunk_ids"], r["grades"])
        for r in lines(out / "questions.jsonl")
    }


def mode_of(body: dict) -> str:
    fmt = body.get("response_format")
    if not fmt:
        return "prompt"
    if fmt["type"] == "json_schema":
        return "json_schema"
    return "json_object_schema" if "schema" in fmt else "json_object"


def reasked(body: dict) -> bool:
    return any(m["role"] == "assistant" for m in body["messages"])


def as_json_schema(body: dict) -> dict:
    """A request sent in a fallback mode, as the json_schema request it stands for: the schema put back
    into response_format and the instructions that carried it taken out (so that it can be compared
    with the requests an OpenAI-like server got)."""
    body = json.loads(json.dumps(body))
    if mode_of(body) == "json_schema":
        return body
    first = body["messages"][0]
    assert first["role"] == "system" and SCHEMA_SAYS in first["content"], first
    schema = json.loads(first["content"].split(SCHEMA_SAYS, 1)[1])
    if mode_of(body) == "json_object_schema":
        assert body["response_format"]["schema"] == schema  # the grammar is the schema the instructions give
    body["messages"] = body["messages"][1:]
    body.pop("response_format", None)
    return {**body, "schema": schema}


def canonical(body: dict) -> str:
    """A request as a comparable string, its response format reduced to the schema it asks for."""
    body = json.loads(json.dumps(body))
    fmt = body.pop("response_format", None)
    if fmt is not None and fmt["type"] == "json_schema":
        body["schema"] = fmt["json_schema"]["schema"]
    return json.dumps(body, sort_keys=True)


def journal_or_output(path: Path) -> list[dict]:
    """The records of a run: its output, or the journal a run that stopped early leaves."""
    journal = Path(f"{path}.journal")
    return lines(path) if path.exists() else lines(journal) if journal.exists() else []


def llm_records(stage: str, out: Path) -> list[dict]:
    """The records a model was asked for (not those a rule decided), from the output or the journal."""
    files = {"judge": ["judgments.jsonl", "coverage.jsonl"], "check": ["checks.jsonl"], "generate": []}[stage]
    return [r for f in files for r in journal_or_output(out / f) if r.get("decided_by") != "rule"]


@pytest.fixture(autouse=True)
def _endpoint_from_the_flags_only(monkeypatch):
    """A key in the environment (as the brief of these tests says), no base URL or model from it."""
    for name in ("OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "x")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """Each stage against the fake as an OpenAI-like server: its decisions and the requests it sent."""
    import os

    saved = {k: os.environ.get(k) for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL")}
    os.environ["OPENAI_API_KEY"] = "x"
    os.environ.pop("OPENAI_BASE_URL", None)
    os.environ.pop("RAGASSAY_MODEL", None)
    try:
        found = {}
        for stage in STAGES:
            out = tmp_path_factory.mktemp(f"reference-{stage}")
            with FakeLLM() as server:
                said = cli(*stage_args(stage, out, server.url, "--concurrency", "1"))
                assert said.code == 0, said.text
                found[stage] = {"decisions": decisions(stage, out), "requests": list(server.requests), "said": said}
        return found
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ------------------------------------------------------------------------- 1, 2, 5: benign habits


@pytest.mark.parametrize("habit", BENIGN)
@pytest.mark.parametrize("stage", STAGES)
def test_a_benign_habit_gives_the_records_an_openai_like_server_gives(tmp_path, reference, stage, habit):
    ref = reference[stage]
    with FakeLLM(habit=habit) as server:
        said = cli(*stage_args(stage, tmp_path, server.url, "--concurrency", "1"))
        requests, statuses = list(server.requests), list(server.statuses)
    assert said.code == 0, said.text
    assert decisions(stage, tmp_path) == ref["decisions"]
    if stage != "generate":
        assert all(r["status"] == "ok" for r in nonempty(llm_records(stage, tmp_path)))

    # the refusals first, each mode once, in ragassay's order; then every request in the mode that worked
    refused = REFUSED.get(habit, [])
    assert [(mode_of(b), s) for b, s in zip(requests, statuses)][: len(refused)] == refused
    answered = requests[len(refused) :]
    assert statuses[len(refused) :] == [200] * len(answered)
    assert {mode_of(b) for b in nonempty(answered)} == {FINAL_MODE.get(habit, "json_schema")}

    # the same questions as the OpenAI-like server was asked, each once (loose decisions: plus one re-ask each)
    first_tries = [b for b in answered if not reasked(b)]
    assert sorted(canonical(as_json_schema(b)) for b in first_tries) == sorted(canonical(b) for b in ref["requests"])
    again = [b for b in answered if reasked(b)]
    if habit == "loose_decisions":  # a grade 2.5 or true, a label "Correct", a score 4.5: asked again, never taken
        deciding = [b for b in first_tries if b["response_format"]["json_schema"]["name"] in DECIDING]
        assert len(again) == len(nonempty(deciding))
    else:
        assert again == []
    if habit == "prose":  # every answer was read from prose or a fence, and the usage line counts them
        assert f"({len(first_tries)} read from JSON inside prose or a fence)" in said.text
    if habit == "loose_reasoning" and stage == "judge":  # the lists and objects kept as text
        assert all("aspect 1: " in r["reasoning"] for r in nonempty(lines(tmp_path / "judgments.jsonl")))
    if habit == "loose_reasoning" and stage == "check":
        assert all("claim 1: " in r["rationale"] for r in nonempty(llm_records(stage, tmp_path)))


# ---------------------------------------------------------------------------- 1: the mode found


def test_the_mode_that_worked_is_the_first_request_of_a_later_run_on_that_endpoint_and_model(tmp_path):
    with FakeLLM(habit="llama_cpp_python") as server:
        said = cli(*stage_args("judge", tmp_path / "a", server.url, "--concurrency", "1"))
        assert said.code == 0, said.text
        assert [mode_of(b) for b in server.requests[:2]] == ["json_schema", "json_object_schema"]
        assert server.statuses[:2] == [500, 200]
        before = server.calls
        cache = tmp_path / "a" / "cache.sqlite"
        said = cli(*stage_args("check", tmp_path / "b", server.url, "--concurrency", "1", cache=cache))
        assert said.code == 0, said.text
        later = server.requests[before:]
        # the later run's first request is already in the mode found: the schema as llama.cpp's grammar,
        # the same schema in the instructions, and nothing else of the request changed
        first = later[0]
        assert first["response_format"]["type"] == "json_object"
        assert first["response_format"]["schema"]["title"] == "AnswerVerdict"
        instructions = first["messages"][0]["content"]
        assert json.loads(instructions.split(SCHEMA_SAYS, 1)[1]) == first["response_format"]["schema"]
        assert set(first) == {"model", "messages", "temperature", "max_tokens", "response_format"}
        assert {mode_of(b) for b in nonempty(later)} == {"json_object_schema"}
        assert server.statuses[before:] == [200] * len(later)
        # another model on the same endpoint has found nothing yet: it starts from json_schema
        before = server.calls
        said = cli(*stage_args("check", tmp_path / "c", server.url, "--concurrency", "1", model="other", cache=cache))
        assert said.code == 0, said.text
        assert [mode_of(b) for b in server.requests[before : before + 2]] == ["json_schema", "json_object_schema"]
    # and another endpoint serving the same model name has found nothing yet either
    with FakeLLM(habit="llama_cpp_python") as elsewhere:
        said = cli(*stage_args("check", tmp_path / "d", elsewhere.url, "--concurrency", "1", cache=cache))
        assert said.code == 0, said.text
        assert [mode_of(b) for b in elsewhere.requests[:2]] == ["json_schema", "json_object_schema"]


def test_a_mode_is_remembered_only_once_a_call_in_it_succeeds(tmp_path):
    """llama-cpp-python with a context too small for any prompt: json_schema is refused for its format,
    the next mode for the prompt's length (a context refusal never moves on to another mode); nothing
    succeeded, so a later run starts from json_schema again."""
    with FakeLLM(habit="llama_cpp_python", context=100) as server:
        said = cli(*stage_args("check", tmp_path / "a", server.url, "--concurrency", "1"))
        assert said.code == 1, said.text
        seen = [(mode_of(b), s) for b, s in zip(server.requests, server.statuses)]
        assert seen[:2] == [("json_schema", 500), ("json_object_schema", 400)]
        assert {m for m, _ in seen} == {"json_schema", "json_object_schema"}  # never json_object or prompt
        assert "maximum context length is 100 tokens" in said.err
        server.context = None  # the server restarted with a longer context
        before = server.calls
        said = cli(
            *stage_args(
                "check", tmp_path / "b", server.url, "--concurrency", "1", cache=tmp_path / "a" / "cache.sqlite"
            )
        )
        assert said.code == 0, said.text
        assert [mode_of(b) for b in server.requests[before : before + 2]] == ["json_schema", "json_object_schema"]


@pytest.mark.parametrize(
    "habit, says, why",
    [
        (None, "supported (json_schema)", None),
        ("llama_cpp_python", "json_schema refused; using JSON mode with the schema", "HTTP 500"),
        ("vllm_400", "json_schema refused; using JSON mode with the schema", "HTTP 400"),
        ("tgi_422", "json_schema and JSON mode refused; using instructions", "HTTP 422"),
    ],
)
def test_ping_says_the_mode_and_why_and_a_later_run_starts_with_it(tmp_path, habit, says, why):
    with FakeLLM(habit=habit) as server:
        said = cli("ping", "--base-url", server.url, "--model", "m")
        assert said.code == 0, said.text
        assert f"structured outputs:  {says}" in said.out
        if why is None:
            assert "why:" not in said.out
        else:
            (line,) = [x for x in said.out.splitlines() if x.startswith("why:")]
            assert why in line and "response_format" in line  # the server's own words
        # the check, each refused mode once, then three calls in the settled mode that measure the speed
        assert len(server.requests) == 1 + len(REFUSED.get(habit, [])) + 3
        final = FINAL_MODE.get(habit or "", "json_schema")
        assert [mode_of(b) for b in server.requests[-3:]] == [final] * 3 and server.statuses[-3:] == [200] * 3
        # a fake that answers at once: the longer calls take no measurable time more, and ping says so
        assert "speed:               not measured: " in said.out
        before = server.calls
        # no --cache: the default answer cache, where ping kept what it found
        said = cli(*stage_args("generate", tmp_path, server.url, "--concurrency", "1", cache=None))
        assert said.code == 0, said.text
        assert mode_of(server.requests[before]) == FINAL_MODE.get(habit or "", "json_schema")
        assert set(server.statuses[before:]) == {200}


def test_each_refused_mode_reaches_the_server_once_at_the_default_concurrency(tmp_path):
    with FakeLLM(habit="llama_cpp_python") as server:
        said = cli(*stage_args("judge", tmp_path, server.url))
        assert said.code == 0, said.text
        refused = Counter(mode_of(b) for b, s in zip(server.requests, server.statuses) if s != 200)
    assert refused == {"json_schema": 1}


# --------------------------------------------------------------------- 2: unusable replies, re-asks


@pytest.mark.parametrize(
    "habit, why",
    [
        ("repeat_invalid", "the answer is not valid JSON"),
        ("two_answers", "the reply holds more than one answer that differ"),
    ],
)
@pytest.mark.parametrize("stage", STAGES)
def test_a_reply_repeated_byte_for_byte_is_not_asked_for_again_and_decides_nothing(tmp_path, stage, habit, why):
    with FakeLLM(habit=habit) as server:
        said = cli(*stage_args(stage, tmp_path, server.url, "--concurrency", "1"))
        requests = list(server.requests)
    # every question asked twice: once, then once again with what was wrong; the second reply is the
    # first byte for byte, so the third try the re-ask limit allows is not sent
    first, again = [b for b in requests if not reasked(b)], [b for b in requests if reasked(b)]
    assert len(nonempty(again)) == len(first)
    assert all(sum(m["role"] == "assistant" for m in b["messages"]) == 1 for b in again)
    assert sorted(json.dumps(b["messages"][: len(b["messages"]) - 2]) for b in again) == sorted(
        json.dumps(b["messages"]) for b in first
    )
    assert said.code == (3 if stage == "check" else 1), said.text  # check's rules decided two answers
    assert "repeated an earlier one byte for byte: not asked again" in said.text and why[:30] in said.text
    if stage == "generate":  # no question from such replies; the summary says why each call failed
        assert lines(tmp_path / "questions.jsonl") == []
        assert (
            f"model calls failed {len(first)} times; commonest ({len(first)}): invalid: no usable answer after 2 "
            "tries (the last reply repeated an earlier one byte for byte" in said.out
        )
        return
    for r in nonempty(llm_records(stage, tmp_path)):
        assert r["status"] == "error" and r["error"].startswith("invalid: no usable answer after 2 tries")
        assert why in r["error"]
        assert r.get("grade") is None and r.get("label") is None and r.get("coverage") is None


# --------------------------------------------------------------------------------- 3: cut prompts


@pytest.mark.parametrize("stage", STAGES)
def test_a_server_that_cut_every_prompt_gives_error_records_and_the_run_stops(tmp_path, stage):
    """Ollama keeping the last 300 tokens of each prompt. The example's pointwise judge prompts (about
    460 estimated tokens) cannot be told cut by the rule (it needs the server's count under half the
    estimate and 256 or more): judge runs with --cache-friendly, whose prompts pass 1,024 tokens."""
    extra = ["--cache-friendly"] if stage == "judge" else []
    with FakeLLM(habit="ollama_cut") as server:
        said = cli(*stage_args(stage, tmp_path, server.url, "--concurrency", "1", *extra))
        calls = server.settled_calls()
        requests = list(server.requests)
    assert said.code == 1, said.text
    assert (
        f"stopped early: the first 3 {stage} calls all failed the same way: the server read 300 of about " in said.err
    )
    assert calls == 3 and {mode_of(b) for b in requests} == {"json_schema"}
    assert not any(reasked(b) for b in requests)  # a cut prompt is not asked again: it would be cut the same way
    if stage == "generate":  # generate journals candidates, not records: no question was written
        assert not (tmp_path / "questions.jsonl").exists()
        return
    records = llm_records(stage, tmp_path)
    assert len(records) == 3
    for r in nonempty(records):
        assert r["status"] == "error" and r["error"].startswith("cut: the server read 300 of about ")
        assert r.get("grade") is None and r.get("label") is None and r.get("coverage") is None


def long_context_answers(tmp_path: Path, long_ids: set[str], chars: int = 9000) -> Path:
    """The example's answers, those of ``long_ids`` with their passages given as text many times over."""
    chunks = {c["id"]: c["text"] for c in lines(EXAMPLE / "chunks.jsonl")}
    out = []
    for a in lines(EXAMPLE / "answers.jsonl"):
        if a["id"] in long_ids:
            text = " ".join(chunks[c] for c in a.pop("context_ids"))
            a["contexts"] = [text] * (chars // len(text) + 1)
        out.append(a)
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in out), encoding="utf-8")
    return path


LONG = {"q04", "q09"}  # neither among the first answers asked, so the run has succeeded before they come


def test_an_answer_whose_prompt_was_cut_is_an_error_record_and_the_others_are_labelled(tmp_path, reference):
    answers = long_context_answers(tmp_path, LONG)
    with FakeLLM(habit="ollama_cut", context=1500) as server:
        said = cli(*stage_args("check", tmp_path, server.url, "--concurrency", "1", answers=answers))
        requests = list(server.requests)
    assert said.code == 3, said.text
    got = {r["id"]: r for r in lines(tmp_path / "checks.jsonl")}
    for i in nonempty(sorted(LONG)):
        assert got[i]["status"] == "error" and got[i]["label"] is None
        assert got[i]["error"].startswith("cut: the server read 1,500 of about ")  # both counts named
    expected = {i: d for i, d in reference["check"]["decisions"].items() if i not in LONG}
    assert len(expected) == 14 and {i: d for i, d in decisions("check", tmp_path).items() if i not in LONG} == expected
    assert len(requests) == 14 and not any(reasked(b) for b in requests)  # each answer asked once


# ---------------------------------------------------------------------------- 4: context refusals


@pytest.mark.parametrize(
    "habit, names",
    [
        ("context_400", "maximum context length is 256 tokens"),
        ("llama_server_400", "exceeds the available context size (256 tokens)"),
    ],
)
@pytest.mark.parametrize("stage", STAGES)
def test_a_context_refusal_is_an_error_record_and_longer_prompts_are_not_sent(tmp_path, stage, habit, names):
    with FakeLLM(habit=habit, context=256) as server:
        said = cli(*stage_args(stage, tmp_path, server.url, "--concurrency", "1"))
        calls = server.settled_calls()
        requests, statuses = list(server.requests), list(server.statuses)
    assert said.code == 1, said.text
    # one request, refused with the server's context; every later prompt is estimated well over it: not sent
    assert calls == 1 and statuses == [400] and mode_of(requests[0]) == "json_schema"  # no fallback on length
    assert (
        f"stopped early: the first 3 {stage} calls all failed the same way: the prompt does not fit the "
        "server's context of 256 tokens"
        in said.err
        and names in said.err
    )
    records = llm_records(stage, tmp_path)
    if stage != "generate":
        assert len(records) == 3
        assert records[0]["error"].startswith("context: the prompt does not fit the server's context of 256 tokens")
        for r in nonempty(records[1:]):
            assert (
                r["error"].startswith("context: the prompt is about ")
                and "the server's context is 256 (it said so in an earlier reply): not sent" in r["error"]
            )
        assert all(r["status"] == "error" and r.get("grade") is None and r.get("label") is None for r in records)


@pytest.mark.parametrize("stage", STAGES)
def test_tgi_refuses_the_formats_then_the_length_and_the_length_is_what_the_user_is_told(tmp_path, stage):
    """TGI refuses every response_format OpenAI's way (422, text/plain) and then a request longer than its
    max_total_tokens (422, JSON whose "error" is a string): the first four requests find the mode, the
    fourth's refusal names the context, and no later prompt is sent."""
    with FakeLLM(habit="tgi_422", context=256) as server:
        said = cli(*stage_args(stage, tmp_path, server.url, "--concurrency", "1"))
        requests, statuses = list(server.requests), list(server.statuses)
    assert said.code == 1, said.text
    assert [mode_of(b) for b in requests] == ["json_schema", "json_object_schema", "json_object", "prompt"]
    assert statuses == [422, 422, 422, 422]
    assert "the prompt does not fit the server's context of 256 tokens" in said.err
    assert "`inputs` tokens + `max_new_tokens` must be <= 256" in said.err
    records = llm_records(stage, tmp_path)
    if stage != "generate":
        assert len(records) == 3 and all(r["status"] == "error" for r in records)
        assert records[0]["error"].startswith("context: the prompt does not fit the server's context of 256 tokens")
        assert all("not sent" in r["error"] for r in nonempty(records[1:]))


@pytest.mark.parametrize(
    "habit, context, names",
    [
        ("context_400", 2500, "maximum context length is 2500 tokens"),  # vLLM counts max_tokens (700) in
        ("llama_server_400", 2000, "exceeds the available context size (2000 tokens)"),
    ],
)
def test_one_answer_too_long_for_the_context_and_the_next_one_not_sent(tmp_path, reference, habit, context, names):
    answers = long_context_answers(tmp_path, LONG)
    with FakeLLM(habit=habit, context=context) as server:
        said = cli(*stage_args("check", tmp_path, server.url, "--concurrency", "1", answers=answers))
        requests, statuses = list(server.requests), list(server.statuses)
    assert said.code == 3, said.text
    got = {r["id"]: r for r in lines(tmp_path / "checks.jsonl")}
    first, second = sorted(LONG)
    assert got[first]["status"] == "error" and names in got[first]["error"]
    assert got[first]["error"].startswith(f"context: the prompt does not fit the server's context of {context} tokens")
    assert got[second]["status"] == "error" and got[second]["error"].startswith("context: the prompt is about ")
    assert f"the server's context is {context:,} (it said so in an earlier reply): not sent" in got[second]["error"]
    expected = {i: d for i, d in reference["check"]["decisions"].items() if i not in LONG}
    assert len(expected) == 14 and {i: d for i, d in decisions("check", tmp_path).items() if i not in LONG} == expected
    # 14 answers need the model: the second long one was never sent, and nothing fell back to another mode
    assert len(requests) == 13 and Counter(statuses) == {200: 12, 400: 1}
    assert {mode_of(b) for b in requests} == {"json_schema"}


# ------------------------------------------------------------------------------ defects found here, fixed


def test_a_spending_ceiling_holds_against_a_server_that_sends_no_usage(tmp_path):
    ceiling = ["--concurrency", "1", "--price-in", "10", "--price-out", "10", "--max-cost", "0.05"]
    with FakeLLM() as server:
        with_usage = cli(*stage_args("check", tmp_path / "a", server.url, *ceiling))
        counted = server.calls
    assert with_usage.code == 3 and "stopped at the --max-cost $0.05 ceiling" in with_usage.text and counted < 14
    with FakeLLM(habit="no_usage") as server:
        without = cli(*stage_args("check", tmp_path / "b", server.url, *ceiling))
        uncounted = server.calls
    assert uncounted <= counted, f"{uncounted} calls sent past a $0.05 ceiling that stopped at {counted} with usage"
    assert without.code == 3


def test_the_cost_of_calls_to_a_server_that_sends_no_usage_is_not_said_to_be_zero(tmp_path):
    with FakeLLM(habit="no_usage") as server:
        said = cli(*stage_args("check", tmp_path, server.url, "--price-in", "10", "--price-out", "10"))
        assert server.calls == 14
    assert said.code == 0, said.text
    (usage,) = [x for x in said.text.splitlines() if "14 calls" in x]
    assert "$0.0000" not in usage


@pytest.mark.parametrize("stage", ["check", "generate"])
def test_the_fix_a_cut_error_names_is_a_flag_of_the_stage(tmp_path, stage):
    with FakeLLM(habit="ollama_cut") as server:
        said = cli(*stage_args(stage, tmp_path, server.url, "--concurrency", "1"))
    assert said.code == 1 and "cut the prompt" in said.err
    named = sorted(set(w.strip("(),.;") for w in said.err.split() if w.startswith("--")))
    accepted = cli(stage, "--help").out
    assert [f for f in named if f"{f} " not in accepted and f"{f}\n" not in accepted] == []  # none, or its own


def test_an_answer_labelled_from_a_prompt_ollama_cut_at_its_default_context_is_not_a_label(tmp_path):
    answers = long_context_answers(tmp_path, {"q01"}, chars=9500)
    with FakeLLM() as server:
        whole = cli(*stage_args("check", tmp_path / "whole", server.url, "--concurrency", "1", answers=answers))
    assert whole.code == 0 and decisions("check", tmp_path / "whole")["q01"][:2] == ("ok", "correct")
    with FakeLLM(habit="ollama_cut", context=2048) as server:
        said = cli(*stage_args("check", tmp_path / "cut", server.url, "--concurrency", "1", answers=answers))
        (asked,) = [b for b in server.requests if "How long do I have to ask for a refund?" in json.dumps(b)]
    assert sum(len(m["content"]) for m in asked["messages"]) // 4 > 3500  # about what ragassay estimates it sent
    got = {r["id"]: r for r in lines(tmp_path / "cut" / "checks.jsonl")}
    assert (got["q01"]["status"], got["q01"]["label"]) == ("error", None), got["q01"]
    assert got["q01"]["error"].startswith("cut: the server read 2,048 of about ")
    assert said.code == 3, said.text


# ------------------------------------------------------------------- windows sized to a told context


def _long_chunk_files(tmp_path: Path) -> tuple[Path, Path]:
    """The example's chunks with one chunk that bm25 ranks first for a query made about 7,000
    characters long, and a run of that query's top 2."""
    run = [line.split() for line in (EXAMPLE / "runs" / "bm25.txt").read_text().splitlines()]
    query, long_id = run[0][0], run[0][2]
    top = [r for r in run if r[0] == query][:2]
    chunks = []
    for c in lines(EXAMPLE / "chunks.jsonl"):
        if c["id"] == long_id:
            c["text"] = " ".join([c["text"]] * (7000 // len(c["text"]) + 1))
        chunks.append(c)
    chunks_path, run_path = tmp_path / "chunks.jsonl", tmp_path / "run.txt"
    chunks_path.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    run_path.write_text("".join(" ".join(r) + "\n" for r in top))
    return chunks_path, run_path


@pytest.mark.parametrize("told", [True, False])
def test_a_long_chunk_is_judged_in_windows_that_fit_the_context_the_server_told(tmp_path, told):
    """llama-server says its context in /props: the judge's windows shrink to fit it, and every
    prompt is read whole. A server that does not say it refuses the long chunk's prompt (an error
    record naming its context), as before."""
    chunks, run = _long_chunk_files(tmp_path)
    out = tmp_path / "j.jsonl"
    with FakeLLM(habit="llama_server_400", context=1500, props=told) as server:
        said = cli(
            "judge",
            "--queries",
            EXAMPLE / "queries.jsonl",
            "--chunks",
            chunks,
            "--run",
            run,
            "-o",
            out,
            "--base-url",
            server.url,
            "--model",
            "m",
            "--no-cache",
            "--concurrency",
            "1",
        )
        statuses = list(server.statuses)
    records = lines(out)
    assert len(records) == 2
    if told:
        assert said.code == 0, said.text
        assert set(statuses) == {200} and len(statuses) > 3  # the long chunk in several windows, none refused
        assert all(r["status"] == "ok" for r in records)
        assert "judge: the server's context is 1,500 tokens: chunks longer than " in said.err
        assert "characters are judged in windows of that size" in said.err
    else:
        assert said.code == 3, said.text
        assert 400 in statuses and "windows of that size" not in said.err
        assert sorted(r["status"] for r in records) == ["error", "ok"]
        assert [r for r in records if r["status"] == "error"][0]["error"].startswith(
            "context: the prompt does not fit the server's context of 1500 tokens"
        )


def test_windows_fit_the_room_a_context_leaves_and_are_left_alone_where_they_fit():
    from ragassay.stages.judge import JudgeOptions, fit_to_context

    options = JudgeOptions(max_tokens=600, max_chunk_chars=6000)
    assert fit_to_context(options, None, 500) is options  # nothing told
    assert fit_to_context(options, 32768, 500) is options  # the default windows fit
    fitted = fit_to_context(options, 2048, 500)
    assert fitted.max_chunk_chars == (2048 - 600 - 500) * 3 and fitted.window_overlap == 300
    assert fit_to_context(JudgeOptions(max_tokens=600, batch=4), 2048, 500).max_chunk_chars == (2048 - 1100) * 3 // 4
    assert fit_to_context(options, 1200, 500) is options  # no room even for a short window: the client refuses
    assert fit_to_context(JudgeOptions(long_chunks="cut"), 2048, 500).long_chunks == "cut"
    small = fit_to_context(options, 1400, 500)
    assert small.max_chunk_chars == 900 and small.window_overlap == 180  # the overlap shrinks with the window

"""Settings as values: ``options=``, ``config=`` and ``backend=`` give the Python functions what the
keywords give, built once and reused; a keyword beside the value that holds it is refused, never
silently dropped."""

from __future__ import annotations

import pytest

import ragassay
from fake_llm import FakeLLM
from helpers import EXAMPLE, nonempty
from ragassay.api import check_call, generate_call, judge_call
from ragassay.api.settings import LLM_KEYWORDS
from ragassay.cli import build_parser
from ragassay.cli.stage_values import generate_values, stage_arguments
from ragassay.stages.check import CheckOptions
from ragassay.stages.generate import GenerateOptions
from ragassay.stages.judge import JudgeOptions

Q, C, R = EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt"


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_a_config_value_reaches_the_endpoint_as_the_keywords_do():
    with FakeLLM() as server:
        config = ragassay.LLMConfig.from_env(model="fake-value", base_url=server.url, use_cache=False)
        by_value = ragassay.judge(Q, C, R, config=config, options=ragassay.JudgeOptions(depth=1, quiet=True))
        sent_by_value = [r["model"] for r in server.requests]
        by_keywords = ragassay.judge(Q, C, R, model="fake-value", base_url=server.url, no_cache=True, depth=1)
        sent = [r["model"] for r in server.requests]
    assert sent_by_value == ["fake-value"] * 22 and sent == ["fake-value"] * 44
    assert [(r["query_id"], r["chunk_id"], r["grade"]) for r in by_value.records] == [
        (r["query_id"], r["chunk_id"], r["grade"]) for r in by_keywords.records
    ]
    assert by_value.usage["fake-value"]["calls"] == 22


def test_check_and_generate_take_a_config_value_too():
    with FakeLLM() as server:
        config = ragassay.LLMConfig.from_env(model="fake-check", base_url=server.url, use_cache=False)
        checked = ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, config=config)
        asked = len(server.requests)
        made = ragassay.generate(C, limit=2, mix={"easy": 1.0}, config=config)
    assert asked == 14 and checked.usage["fake-check"]["calls"] == 14  # 2 of 16 answers decided by rule
    assert {r["model"] for r in server.requests} == {"fake-check"}
    assert made.usage["fake-check"]["calls"] == len(server.requests) - asked > 0


def test_a_jury_given_as_configs_judges_as_a_jury_of_models_does():
    with FakeLLM() as server:
        jurors = [ragassay.LLMConfig.from_env(model=m, base_url=server.url, use_cache=False) for m in ("j-a", "j-b")]
        by_values = ragassay.judge(Q, C, R, config=jurors, options=ragassay.JudgeOptions(depth=1, quiet=True))
        sent_by_values = sorted(r["model"] for r in server.requests)
        server.requests.clear()
        by_models = ragassay.judge(
            Q, C, R, model=["j-a", "j-b"], base_url=server.url, no_cache=True, options=ragassay.JudgeOptions(depth=1)
        )
        sent_by_models = sorted(r["model"] for r in server.requests)
    assert sent_by_values == sent_by_models == ["j-a"] * 22 + ["j-b"] * 22
    assert by_values.usage["j-a"]["calls"] == by_values.usage["j-b"]["calls"] == 22
    assert [(r["query_id"], r["chunk_id"], r["grade"], r.get("grades")) for r in by_values.records] == [
        (r["query_id"], r["chunk_id"], r["grade"], r.get("grades")) for r in by_models.records
    ]


def test_an_empty_list_of_configs_is_refused_not_read_as_no_endpoint():
    with pytest.raises(TypeError, match="config= holds no LLMConfig"):
        ragassay.judge(Q, C, R, config=[], dry_run=True)


@pytest.mark.parametrize(
    ("command", "models", "expected"),
    [
        ("judge", ["m1", "m2"], ["m1", "m2"]),
        ("judge", ["m1"], "m1"),
        ("check", ["m1", "m2"], "m1"),
        ("generate", ["m1"], "m1"),
    ],
)
def test_the_command_hands_its_endpoint_flags_as_config_values(command, models, expected, monkeypatch):
    """The LLM flags reach the function as ``config=`` (a list for judge's jury, else the first model's
    config, as the keywords would make), and no LLM keyword goes beside it."""
    function, options_type = {
        "judge": (judge_call.judge, JudgeOptions),
        "check": (check_call.check, CheckOptions),
        "generate": (generate_call.generate, GenerateOptions),
    }[command]
    inputs = {
        "judge": ["--queries", str(Q), "--chunks", str(C), "--run", str(R), "-o", "j.jsonl"],
        "check": [str(EXAMPLE / "answers.jsonl"), "-o", "c.jsonl"],
        "generate": [str(C), "-o", "q.jsonl"],
    }[command]
    flags = [f for m in models for f in ("--model", m)] + ["--base-url", "http://127.0.0.1:9/v1", "--max-calls", "7"]
    args = build_parser().parse_args([command, *inputs, *flags])
    extra = (generate_values(args),) if command == "generate" else ()
    given = stage_arguments(args, function, options_type, *extra, jury=command == "judge")
    assert not set(given) & set(LLM_KEYWORDS)
    config = given["config"]
    named = [c.model for c in config] if isinstance(config, list) else config.model
    assert named == expected
    for c in nonempty(config if isinstance(config, list) else [config]):
        assert (c.base_url, c.max_calls) == ("http://127.0.0.1:9/v1", 7)


@pytest.mark.parametrize(
    "keyword",
    [
        {"model": "other"},
        {"base_url": "http://127.0.0.1:9/v1"},
        {"no_cache": True},
        {"max_calls": 3},
        {"cache": "c.sqlite"},
        {"max_attempts": 2},
    ],
)
def test_a_keyword_the_config_value_holds_is_refused_beside_it(keyword):
    config = ragassay.LLMConfig(model="m", base_url="http://127.0.0.1:9/v1")
    (name,) = keyword
    for call in (
        lambda: ragassay.judge(Q, C, R, config=config, dry_run=True, **keyword),
        lambda: ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, config=config, dry_run=True, **keyword),
        lambda: ragassay.generate(C, limit=2, config=config, dry_run=True, **keyword),
    ):
        with pytest.raises(TypeError, match=f"give {name} in config= or as keywords, not both"):
            call()


def test_a_dry_run_with_values_estimates_what_the_keywords_estimate():
    config = ragassay.LLMConfig(model="gpt-4o-mini", use_cache=False)
    by_value = ragassay.judge(
        Q,
        C,
        R,
        config=config,
        options=ragassay.JudgeOptions(depth=2, samples=3),
        backend=ragassay.Backend("batch"),
        dry_run=True,
    )
    by_keywords = ragassay.judge(
        Q, C, R, model="gpt-4o-mini", no_cache=True, depth=2, samples=3, backend="batch", dry_run=True
    )
    assert isinstance(by_value, ragassay.Estimate) and by_value.to_dict() == by_keywords.to_dict()
    assert by_value.calls == 132 and by_value.to_dict()["batch"]["requests_per_round"] == [132]


def test_a_backend_value_writes_the_requests_it_names(tmp_path):
    requests = tmp_path / "requests.jsonl"
    out = ragassay.check(
        EXAMPLE / "answers.jsonl",
        chunks=C,
        model="gpt-4o-mini",
        no_cache=True,
        output=tmp_path / "checks.jsonl",
        backend=ragassay.Backend(export_requests=requests),
    )
    assert len(requests.read_text().splitlines()) == 14 and out.pending == 14


@pytest.mark.parametrize(
    "keyword", [{"export_requests": "r.jsonl"}, {"import_results": ["r.jsonl"]}, {"poll_seconds": 5.0}]
)
def test_a_batch_keyword_beside_a_backend_value_is_refused(keyword):
    with pytest.raises(TypeError, match="in backend= or as keywords, not both"):
        ragassay.judge(Q, C, R, model="m", backend=ragassay.Backend("live"), dry_run=True, **keyword)


def test_a_backend_value_is_checked_as_the_flags_are():
    with pytest.raises(ragassay.RagassayError, match="--backend batch sends the batches itself"):
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, backend=ragassay.Backend("batch", export_requests="r"))
    with pytest.raises(ragassay.RagassayError, match=r"backend must be one of live, batch \(got 'bacth'\)"):
        ragassay.generate(C, limit=2, backend="bacth", dry_run=True)


def test_a_config_value_beside_a_client_is_refused():
    config = ragassay.LLMConfig(model="m", base_url="http://127.0.0.1:9/v1")
    client = ragassay.LLM(ragassay.LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", use_cache=False))
    for call in (
        lambda: ragassay.judge(Q, C, R, llm=client, config=config, dry_run=True),
        lambda: ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, llm=client, config=config, dry_run=True),
        lambda: ragassay.generate(C, limit=2, llm=client, config=config, dry_run=True),
    ):
        with pytest.raises(TypeError, match="give llm= or config=, not both"):
            call()


@pytest.mark.parametrize(
    "keyword",
    [
        {"model": "x"},
        {"base_url": "http://127.0.0.1:9/v1"},
        {"no_cache": True},
        {"concurrency": 2},
        {"max_calls": 3},
        {"cache": "c.sqlite"},
    ],
)
def test_a_keyword_a_client_makes_meaningless_is_refused_saying_the_client_wins(keyword):
    client = ragassay.LLM(ragassay.LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", use_cache=False))
    (name,) = keyword
    for call in (
        lambda: ragassay.judge(Q, C, R, llm=client, dry_run=True, **keyword),
        lambda: ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, llm=client, dry_run=True, **keyword),
        lambda: ragassay.generate(C, limit=2, llm=client, dry_run=True, **keyword),
    ):
        with pytest.raises(TypeError, match=f"{name}: set these on the LLM given as llm= \\(its config is used\\)"):
            call()


def test_a_stage_keyword_is_deprecated_naming_its_options_field_and_gives_the_same_result():
    with pytest.warns(
        DeprecationWarning,
        match=r"ragassay\.judge: the keywords depth, samples are deprecated; "
        r"give options=JudgeOptions\(depth=\.\.\., samples=\.\.\.\)",
    ):
        by_keywords = ragassay.judge(Q, C, R, model="gpt-4o-mini", no_cache=True, depth=2, samples=3, dry_run=True)
    by_value = ragassay.judge(
        Q,
        C,
        R,
        model="gpt-4o-mini",
        no_cache=True,
        dry_run=True,
        options=ragassay.JudgeOptions(depth=2, samples=3, quiet=True),
    )
    assert by_keywords.to_dict() == by_value.to_dict() and by_value.calls == 132
    with pytest.warns(
        DeprecationWarning,
        match=r"ragassay\.check: the keywords samples are deprecated; "
        r"give options=CheckOptions\(samples=\.\.\.\)",
    ):
        checked = ragassay.check(
            EXAMPLE / "answers.jsonl", chunks=C, model="gpt-4o-mini", no_cache=True, samples=3, dry_run=True
        )
    assert (
        checked.to_dict()
        == ragassay.check(
            EXAMPLE / "answers.jsonl",
            chunks=C,
            model="gpt-4o-mini",
            no_cache=True,
            options=ragassay.CheckOptions(samples=3),
            dry_run=True,
        ).to_dict()
    )


def test_a_stage_options_value_is_checked_as_the_flags_are():
    with pytest.raises(ragassay.RagassayError, match="--samples, --batch and --depth must be at least 1"):
        ragassay.judge(Q, C, R, model="m", options=ragassay.JudgeOptions(depth=0), dry_run=True)
    with pytest.raises(ragassay.RagassayError, match="--samples must be at least 1"):
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, options=ragassay.CheckOptions(samples=0), dry_run=True)


def test_generate_takes_its_options_value_and_deprecates_its_stage_keywords():
    with FakeLLM() as server:
        config = ragassay.LLMConfig.from_env(model="fake-gen", base_url=server.url, use_cache=False)
        by_value = ragassay.generate(C, config=config, options=GenerateOptions(limit=2, mix={"easy": 1.0}, quiet=True))
        sent_by_value = list(server.requests)
        with pytest.warns(
            DeprecationWarning,
            match=r"ragassay\.generate: the keywords limit, mix are deprecated; "
            r"give options=GenerateOptions\(limit=\.\.\., mix=\.\.\.\)",
        ):
            by_keywords = ragassay.generate(C, limit=2, mix={"easy": 1.0}, config=config)
        sent = server.requests[len(sent_by_value) :]
    assert len(sent_by_value) == len(sent) > 0 and {r["model"] for r in server.requests} == {"fake-gen"}
    assert [q.question for q in by_value.accepted] == [q.question for q in by_keywords.accepted]
    assert len(by_value.accepted) == 2


def test_a_generate_dry_run_with_an_options_value_estimates_what_the_keywords_estimate():
    by_value = ragassay.generate(C, model="gpt-4o-mini", no_cache=True, dry_run=True, options=GenerateOptions(limit=10))
    with pytest.deprecated_call():
        by_keywords = ragassay.generate(C, limit=10, model="gpt-4o-mini", no_cache=True, dry_run=True)
    assert by_value.to_dict() == by_keywords.to_dict() and (by_value.items, by_value.calls) == (10, 46)


@pytest.mark.parametrize(
    "keyword",
    [
        {"limit": 3},
        {"per_chunk": 2.0},
        {"mix": "easy=1"},
        {"seed": 1},
        {"max_per_doc": 2},
        {"styles": {"question": 1.0}},
    ],
)
def test_a_generate_keyword_beside_its_options_value_is_refused_naming_it(keyword):
    (name,) = keyword
    with pytest.raises(TypeError, match=f"give {name} in options= or as keywords, not both"):
        ragassay.generate(C, model="m", options=GenerateOptions(limit=2), dry_run=True, **keyword)


@pytest.mark.parametrize("field", [{"total": 5}, {"max_calls": 9}])
def test_a_generate_options_field_generate_works_out_is_refused(field):
    (name,) = field
    with pytest.raises(TypeError, match=rf"GenerateOptions\({name}=\.\.\.\) is worked out by generate"):
        ragassay.generate(C, model="m", options=GenerateOptions(**field), dry_run=True)


def test_a_generate_options_value_is_checked_as_the_flags_are():
    with pytest.raises(ragassay.RagassayError, match="--max-per-doc must be at least 1"):
        ragassay.generate(C, model="m", options=GenerateOptions(max_per_doc=0), dry_run=True)
    with pytest.raises(ragassay.RagassayError, match="--mix"):
        ragassay.generate(C, model="m", options=GenerateOptions(mix={"easy": 0.5}), dry_run=True)


def test_the_llm_keywords_are_one_table_every_function_spells_alike():
    import inspect

    from ragassay.api import LLM_KEYWORDS

    for function in nonempty([ragassay.judge, ragassay.check, ragassay.generate]):
        params = inspect.signature(function).parameters
        assert {k: params[k].default for k in LLM_KEYWORDS} == LLM_KEYWORDS, function.__name__


def test_a_model_beside_a_client_is_refused_naming_both():
    client = ragassay.LLM(ragassay.LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", use_cache=False))
    with pytest.raises(TypeError, match=r"model: set these on the LLM given as llm="):
        ragassay.judge(Q, C, R, llm=client, model="x", dry_run=True)
    with pytest.raises(TypeError, match=r"model: set these on the LLM given as llm="):
        ragassay.judge(Q, C, R, llm=[client], model="x", dry_run=True)


def test_check_says_a_partial_join_where_the_caller_says(capsys):
    labels = {"q01": "correct", "nobody": "correct"}  # one label meets no answer: the warning
    said: list[str] = []
    ragassay.check(
        EXAMPLE / "answers.jsonl",
        chunks=C,
        human=labels,
        model="gpt-4o-mini",
        no_cache=True,
        dry_run=True,
        warn=said.append,
    )
    assert said == ["answer ids: 1 of 2 in the --human labels are not in the answers (e.g. nobody)"]
    assert capsys.readouterr().err == ""
    ragassay.check(EXAMPLE / "answers.jsonl", chunks=C, human=labels, model="gpt-4o-mini", no_cache=True, dry_run=True)
    assert capsys.readouterr().err == f"warning: {said[0]}\n"  # by default on stderr, as the command says it
    for quiet in ({"warn": None}, {"join_warnings": False}):  # (join_warnings=False: the earlier spelling)
        ragassay.check(
            EXAMPLE / "answers.jsonl", chunks=C, human=labels, model="gpt-4o-mini", no_cache=True, dry_run=True, **quiet
        )
        assert capsys.readouterr().err == ""

"""The LLM layer against mocked HTTP (respx): real openai client, real parsing, retries, cache.

No test reaches the network; back-off sleeps go to a fake clock that records every wait.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import respx
from pydantic import BaseModel, Field

from fake_llm import chat_reply, make_llm
from ragassay.llm import LLM, LLMConfig, LLMError

BASE = "http://llm.test/v1"
URL = f"{BASE}/chat/completions"
KEY = "sk-test-SECRETKEY0123456789abcdef"


class Grade(BaseModel):
    grade: int = Field(ge=0, le=3)
    reasoning: str


class FakeTime:
    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def completion(
    content: str | None = '{"grade": 2, "reasoning": "ok"}',
    finish: str = "stop",
    refusal: str | None = None,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
) -> httpx.Response:
    return chat_reply(content, finish, prompt_tokens, completion_tokens, refusal)


def error(status: int, message: str = "boom", headers: dict | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, json={"error": {"message": message, "type": "x"}})


MESSAGES = [{"role": "user", "content": "Grade this chunk."}]


def body(call) -> dict:
    return json.loads(call.request.content)


@respx.mock
async def test_structured_answer_and_request_shape(tmp_path):
    route = respx.post(URL).mock(return_value=completion())
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False)
    answer = await llm.ask(MESSAGES, Grade, stage="judge", max_tokens=100)
    assert answer == Grade(grade=2, reasoning="ok")
    sent = body(route.calls[0])
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["additionalProperties"] is False
    assert sent["response_format"]["json_schema"]["strict"] is True
    assert sent["model"] == "test-model" and sent["max_tokens"] == 100
    assert route.calls[0].request.headers["authorization"] == f"Bearer {KEY}"
    s = llm.usage.stage("judge")
    assert (s.calls, s.ok, s.prompt_tokens, s.completion_tokens) == (1, 1, 11, 7)


@respx.mock
async def test_429_honours_retry_after_then_succeeds(tmp_path):
    route = respx.post(URL).mock(side_effect=[error(429, headers={"retry-after": "7"}), completion()])
    fake = FakeTime()
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=fake, api_key=KEY, use_cache=False)
    assert (await llm.ask(MESSAGES, Grade)).grade == 2
    assert route.call_count == 2
    assert fake.sleeps == [7.0]  # the server's wait, not our own back-off
    assert llm.usage.stage("default").retried == 1


@respx.mock
async def test_retry_after_ms_is_capped(tmp_path):
    respx.post(URL).mock(side_effect=[error(429, headers={"retry-after-ms": "900000"}), completion()])
    fake = FakeTime()
    await make_llm(tmp_path, BASE, "test-model", fake_time=fake, api_key=KEY, use_cache=False, max_wait=30).ask(
        MESSAGES, Grade
    )
    assert fake.sleeps == [30]


@respx.mock
async def test_500_500_then_success_with_growing_backoff(tmp_path):
    route = respx.post(URL).mock(side_effect=[error(500), error(503), completion()])
    fake = FakeTime()
    assert (
        await make_llm(tmp_path, BASE, "test-model", fake_time=fake, api_key=KEY, use_cache=False).ask(MESSAGES, Grade)
    ).grade == 2
    assert route.call_count == 3
    assert len(fake.sleeps) == 2 and 0.25 <= fake.sleeps[0] <= 0.5 and 0.5 <= fake.sleeps[1] <= 1.0


@respx.mock
async def test_timeout_then_success(tmp_path):
    """Once the endpoint has answered, a timeout is retried; before that, one timeout is the answer
    (a port that accepts and never replies must not hold the run for the whole deadline)."""
    route = respx.post(URL).mock(side_effect=[completion(), httpx.ReadTimeout("slow"), completion()])
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False)
    assert (await llm.ask(MESSAGES, Grade)).grade == 2
    assert (await llm.ask(MESSAGES + [{"role": "user", "content": "again"}], Grade)).grade == 2
    assert route.call_count == 3


@respx.mock
async def test_a_timeout_before_any_answer_is_not_retried(tmp_path):
    route = respx.post(URL).mock(side_effect=[httpx.ReadTimeout("slow"), completion()])
    with pytest.raises(LLMError) as e:
        await make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False).ask(
            MESSAGES, Grade
        )
    assert route.call_count == 1 and e.value.kind == "transport"
    assert str(e.value).startswith("no answer from http://llm.test/v1 within 60 s (1 attempt(s))")


@respx.mock
async def test_every_attempt_failing_raises_one_typed_error(tmp_path):
    route = respx.post(URL).mock(return_value=error(502, "bad gateway"))
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False, max_attempts=4)
    with pytest.raises(LLMError) as e:
        await llm.ask(MESSAGES, Grade)
    assert e.value.kind == "transport" and e.value.attempts == 4
    assert "HTTP 502" in str(e.value) and "bad gateway" in str(e.value)
    assert route.call_count == 4
    assert llm.usage.stage("default").failed == 1


@respx.mock
async def test_auth_error_is_not_retried_and_hides_the_key(tmp_path):
    route = respx.post(URL).mock(return_value=error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(LLMError) as e:
        await make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False).ask(
            MESSAGES, Grade
        )
    assert e.value.kind == "auth" and route.call_count == 1
    assert KEY not in str(e.value) and "OPENAI_API_KEY" in str(e.value)


@respx.mock
async def test_invalid_json_then_valid_reask_shows_the_error(tmp_path):
    route = respx.post(URL).mock(side_effect=[completion('{"grade": 2, "reasoning": '), completion()])
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False)
    assert (await llm.ask(MESSAGES, Grade)).grade == 2
    second = body(route.calls[1])["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"grade": 2, "reasoning": '}
    assert "not valid JSON" in second[-1]["content"]
    assert llm.usage.stage("default").reasked == 1


@respx.mock
async def test_schema_violation_then_valid(tmp_path):
    route = respx.post(URL).mock(side_effect=[completion('{"grade": 7, "reasoning": "x"}'), completion()])
    assert (
        await make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False).ask(
            MESSAGES, Grade
        )
    ).grade == 2
    reask = body(route.calls[1])["messages"][-1]["content"]
    assert "does not match the schema" in reask and "grade" in reask


@respx.mock
async def test_refusal_every_time_gives_refusal_error_after_two_reasks(tmp_path):
    route = respx.post(URL).mock(return_value=completion(None, refusal="I can't help with that."))
    with pytest.raises(LLMError) as e:
        await make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False).ask(
            MESSAGES, Grade
        )
    assert e.value.kind == "refusal" and route.call_count == 3
    assert "I can't help with that." in str(e.value)


@respx.mock
async def test_truncated_answer_is_reasked_to_be_shorter(tmp_path):
    route = respx.post(URL).mock(side_effect=[completion('{"grade": 2, "reas', finish="length"), completion()])
    assert (
        await make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False).ask(
            MESSAGES, Grade
        )
    ).grade == 2
    assert "shorter" in body(route.calls[1])["messages"][-1]["content"]


@respx.mock
async def test_json_schema_rejected_falls_back_to_json_mode_and_remembers(tmp_path):
    def handler(request):
        sent = json.loads(request.content)
        if sent.get("response_format", {}).get("type") == "json_schema":
            return error(400, "response_format json_schema is not supported by this server")
        return completion('```json\n{"grade": 1, "reasoning": "fenced"}\n```')

    route = respx.post(URL).mock(side_effect=handler)
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False)
    assert (await llm.ask(MESSAGES, Grade)).grade == 1
    assert llm.mode == "json_object_schema"  # the next mode: JSON mode carrying the schema (a grammar)
    fallback = body(route.calls[1])
    assert fallback["response_format"]["type"] == "json_object"
    assert fallback["response_format"]["schema"]["properties"]["grade"]["type"] == "integer"
    assert '"grade"' in fallback["messages"][0]["content"]  # the schema, as instructions too
    await llm.ask([{"role": "user", "content": "another"}], Grade)
    assert route.call_count == 3  # remembered: no second json_schema attempt


@respx.mock
async def test_other_400_is_a_request_error(tmp_path):
    respx.post(URL).mock(return_value=error(400, "model 'nope' does not exist"))
    with pytest.raises(LLMError) as e:
        await make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False).ask(
            MESSAGES, Grade
        )
    assert e.value.kind == "request" and "does not exist" in str(e.value)


@respx.mock
async def test_cache_hit_makes_no_http_call(tmp_path):
    route = respx.post(URL).mock(return_value=completion())
    first = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=True)
    await first.ask(MESSAGES, Grade, max_tokens=50)
    first.close()
    again = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=True)
    assert (await again.ask(MESSAGES, Grade, max_tokens=50)).grade == 2
    assert route.call_count == 1
    assert again.usage.stage("default").cached == 1
    await again.ask(MESSAGES, Grade, max_tokens=51)  # other parameters: another key
    assert route.call_count == 2


@respx.mock
async def test_concurrency_never_exceeds_the_limit(tmp_path):
    state = {"now": 0, "max": 0}

    async def slow(request):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return completion()

    respx.post(URL).mock(side_effect=slow)
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False, concurrency=3)
    await asyncio.gather(*(llm.ask([{"role": "user", "content": f"q{i}"}], Grade) for i in range(20)))
    assert state["max"] == 3 and llm.max_in_flight == 3


def test_config_needs_a_key_or_a_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("RAGASSAY_MODEL", "m")
    with pytest.raises(LLMError, match="OPENAI_BASE_URL"):
        LLMConfig.from_env().check()
    cfg = LLMConfig.from_env(base_url="http://localhost:8000/v1")  # a local server needs no key
    cfg.check()
    assert cfg.model == "m"
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg")
    assert str(LLMConfig.from_env(base_url="http://x").cache_path) == "/tmp/xdg/ragassay/llm-cache.sqlite"
    creds = LLMConfig(model="m", base_url="https://user:hunter2pass@proxy.example/v1")
    assert "hunter2pass" not in creds.public_base_url()


@respx.mock
def test_ping_command(monkeypatch, capsys):
    from ragassay.cli import main

    respx.post(URL).mock(return_value=completion('{"ok": true, "echo": "lanternfish"}'))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert main(["ping", "--base-url", BASE, "--model", "test-model"]) == 0
    out = capsys.readouterr().out
    assert "supported (json_schema)" in out and "status:              ok" in out
    respx.post(URL).mock(return_value=error(401, "nope"))
    assert main(["ping", "--base-url", BASE, "--model", "test-model"]) == 1
    assert "refused the credentials" in capsys.readouterr().err


def test_prompts_are_versioned_and_shipped():
    from ragassay.llm.prompts import load_prompt

    p = load_prompt("ping")
    assert p.id.startswith("ping@") and len(p.version) == 8
    assert "lanternfish" in p.render(word="lanternfish")
    with pytest.raises(ValueError, match="missing"):
        p.render()


@respx.mock
async def test_dry_run_counts_calls_and_cost_without_calling(tmp_path):
    route = respx.post(URL).mock(return_value=completion())
    llm = make_llm(
        tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=True, price_in=2.0, price_out=8.0
    )
    await llm.ask(MESSAGES, Grade, max_tokens=100)
    llm.close()
    from ragassay.runtime.engine import Call, WorkItem, estimate

    items = [
        WorkItem("a", [Call.of(0, MESSAGES, Grade, "s", 100)], None),
        WorkItem("b", [Call.of(0, [{"role": "user", "content": "x" * 400}], Grade, "s", 100)], None),
        WorkItem("c", [], None),
        WorkItem("d", [Call.of(0, MESSAGES, Grade, "s", 100, sample=1)], None),
    ]
    plan = estimate(items, lambda it: it.key == "d", [llm.config])
    assert route.call_count == 1  # only the real ask above
    assert (plan.items, plan.done, plan.decided_without_call, plan.cached, plan.calls) == (4, 1, 1, 1, 1)
    assert plan.output_tokens == 100 and plan.input_tokens > 100
    assert plan.cost_usd == pytest.approx((plan.input_tokens * 2 + 100 * 8) / 1e6)


def test_price_table_and_overrides():
    from ragassay.llm.usage import Usage, price_for

    assert price_for("gpt-4o-mini-2024-07-18") == price_for("gpt-4o-mini")
    assert price_for("my-local-model") is None
    assert price_for("my-local-model", 0.5, 1.0) == (0.5, 1.0)
    u = Usage("gpt-4o-mini")
    s = u.stage("judge")
    s.prompt_tokens, s.completion_tokens = 1_000_000, 1_000_000
    assert u.cost() == pytest.approx(0.75)


@respx.mock
async def test_tokens_from_the_providers_prompt_cache_are_priced_at_the_cached_rate(tmp_path):
    """OpenAI's usage says how many input tokens its prompt cache served; they cost the cached price
    (gpt-4o-mini: $0.075 instead of $0.15 a million), the rest the full one. An endpoint that says
    nothing, or says nonsense, gets no discount."""

    def reply(cached):
        r = chat_reply({"grade": 1, "reasoning": "ok"}, prompt_tokens=2000, completion_tokens=100)
        data = json.loads(r.content)
        if cached is not None:
            data["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        return httpx.Response(200, json=data)

    route = respx.post(URL).mock(side_effect=[reply(1536), reply(None), reply(-5), reply(99999)])
    llm = make_llm(tmp_path, BASE, "gpt-4o-mini", fake_time=FakeTime(), api_key=KEY, use_cache=False)
    for i in range(4):
        await llm.ask([{"role": "user", "content": f"q{i}"}], Grade, stage="judge")
    assert route.call_count == 4
    s = llm.usage.stage("judge")
    assert s.prompt_tokens == 8000 and s.cached_tokens == 1536 + 0 + 0 + 2000  # capped at the prompt's size
    full = 8000 - 3536
    assert llm.usage.cost() == pytest.approx((full * 0.15 + 3536 * 0.075 + 400 * 0.60) / 1e6)
    assert "(3536 from the provider's prompt cache)" in llm.usage.summary()
    assert llm.usage.to_dict()["cached_tokens"] == 3536


def test_cached_and_batch_prices():
    from ragassay.llm.usage import Usage, cached_price_for

    assert cached_price_for("gpt-4.1-mini-2025-04-14") == 0.10
    assert cached_price_for("gpt-4.1-mini", 0.4, 1.6) == 0.4  # own prices: no discount assumed
    assert cached_price_for("local-model") is None and cached_price_for("local-model", 1.0, 2.0) == 1.0
    u = Usage("gpt-4o")
    s = u.stage("judge")
    s.prompt_tokens, s.completion_tokens = 3_000_000, 1_000_000
    s.batch_prompt_tokens, s.batch_completion_tokens = 1_000_000, 1_000_000  # of those, through the Batch API
    s.cached_tokens = 1_000_000
    # live: 1M full input + 1M cached input; batch: 1M input and 1M output at half price
    assert u.cost() == pytest.approx(2.50 + 1.25 + (2.50 + 10.00) / 2)


async def test_the_aiohttp_transport_against_a_real_server_across_event_loops(tmp_path, monkeypatch):
    """The default transport (respx cannot see it): answers from the fake server, one LLM serving
    several event loops in turn (stages one after another), each loop's connections closed with it."""
    import gc
    import warnings

    from fake_llm import FakeLLM, dead_url
    from ragassay.llm.config import transport_for

    monkeypatch.delenv("RAGASSAY_HTTP")
    with FakeLLM() as fake:
        cfg = LLMConfig(model="fake", base_url=fake.url, use_cache=False, concurrency=3)
        assert transport_for(cfg) == "aiohttp"
        llm = LLM(cfg)
        from ragassay.llm.ping import PingAnswer

        ask = [{"role": "user", "content": "Reply with ok true and echo the word lanternfish."}]
        answers = await asyncio.gather(*(llm.ask(ask, PingAnswer, sample=i) for i in range(6)))
        assert {a.echo for a in answers} == {"lanternfish"} and llm.max_in_flight <= 3
        assert type(llm.client._client).__name__ == "_DefaultAioHttpClient"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")

            def another_loop() -> str:
                return asyncio.run(llm.ask(ask, PingAnswer, sample=99)).echo

            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as pool:  # a loop of its own, as a second stage or a notebook gets
                assert pool.submit(another_loop).result() == "lanternfish"
                assert pool.submit(another_loop).result() == "lanternfish"
            gc.collect()
        assert not [w for w in caught if "nclosed" in str(w.message)], [str(w.message) for w in caught]
        assert fake.calls == 8
        await llm.aclose()
    refused = LLM(LLMConfig(model="fake", base_url=dead_url(), use_cache=False, transport="aiohttp"))
    with pytest.raises(LLMError) as e:
        await refused.ask(ask, PingAnswer)
    assert "could not connect" in str(e.value) and "within" not in str(e.value)  # refused, not timed out


def test_the_transport_is_chosen_once_and_named_when_wrong(monkeypatch):
    from ragassay.llm.config import transport_for

    cfg = LLMConfig(model="m", base_url=BASE)
    monkeypatch.setenv("RAGASSAY_HTTP", "httpx")
    assert transport_for(cfg) == "httpx"
    assert transport_for(LLMConfig(model="m", base_url=BASE, transport="aiohttp")) == "aiohttp"  # the setting wins
    monkeypatch.setenv("RAGASSAY_HTTP", "curl")
    with pytest.raises(LLMError, match="unknown HTTP transport 'curl'"):
        transport_for(cfg)
    monkeypatch.delenv("RAGASSAY_HTTP")
    assert transport_for(cfg) == "aiohttp"
    import sys

    monkeypatch.setitem(sys.modules, "httpx_aiohttp", None)  # not installed: httpx, unless aiohttp was asked for
    assert transport_for(cfg) == "httpx"
    with pytest.raises(LLMError, match="pip install 'openai\\[aiohttp\\]'"):
        transport_for(LLMConfig(model="m", base_url=BASE, transport="aiohttp"))


def test_every_client_of_a_process_verifies_with_one_context_from_where_the_certificates_are(tmp_path, monkeypatch):
    """The CA bundle is loaded once a process (~40 ms each time otherwise), for both transports and the
    question to a server of what it is; it still verifies, and SSL_CERT_FILE still says what it trusts."""
    import ssl

    import certifi

    from ragassay.llm.config import make_client, tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    shared = tls_context()
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 100  # the bundle httpx trusts
    monkeypatch.setenv("RAGASSAY_HTTP", "httpx")
    assert make_client(LLMConfig(model="m", base_url=BASE))._client._transport._pool._ssl_context is shared
    monkeypatch.setenv("RAGASSAY_HTTP", "aiohttp")
    assert make_client(LLMConfig(model="m", base_url=BASE))._client._transport.ssl_context is shared
    from ragassay.llm import server_info

    verified = []
    real_client = httpx.AsyncClient
    monkeypatch.setattr(httpx, "AsyncClient", lambda **kw: verified.append(kw["verify"]) or real_client(**kw))
    asyncio.run(server_info.discover("http://127.0.0.1:9/v1", "m"))  # nothing listens: asked, and let be
    assert verified == [shared]
    bundle = certifi.contents()
    one = bundle[: bundle.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----\n")]
    (tmp_path / "ca.pem").write_text(one)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # a company's own CA, say
    own = tls_context()
    assert own is not shared and own.cert_store_stats()["x509_ca"] == 1 and tls_context() is own
    monkeypatch.delenv("SSL_CERT_FILE")
    assert tls_context() is shared


@respx.mock
async def test_the_body_posted_is_the_one_built_and_the_connection_pool_fits_the_concurrency(tmp_path):
    """Bodies go out as built (no openai transform): exactly the request_body, byte for byte as JSON."""
    route = respx.post(URL).mock(return_value=completion())
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False, concurrency=5)
    await llm.ask(MESSAGES, Grade, stage="judge", max_tokens=77, seed=3)
    assert body(route.calls[0]) == llm.request_body(MESSAGES, Grade, llm.params(77, None, 3))
    pool = llm.client._client._transport._pool
    assert pool._max_connections == 5 and pool._max_keepalive_connections == 5


def test_the_cache_key_written_part_by_part_is_the_canonical_json_of_the_whole():
    """Keys must not move between versions (a user's cache would be lost): the fast spelling equals
    hashing the whole request object as canonical JSON, with text that needs escaping."""
    import hashlib

    from ragassay.llm.cache import cache_key
    from ragassay.llm.schemas import request_key, schema_of

    messages = [
        {"role": "system", "content": 'Grade "this" — ünïcode\n\t<<<PASSAGE>>> \\ {"a": 1}'},
        {"role": "user", "content": "x" * 5000},
    ]
    params = {"temperature": 0.7, "max_tokens": None, "seed": 3, "sample": 2}
    whole = json.dumps(
        {
            "endpoint": "http://h:8000/v1",
            "model": "m/ö",
            "messages": messages,
            "schema": schema_of(Grade)[1],
            "params": params,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    expected = hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert cache_key("m/ö", messages, schema_of(Grade)[1], params, "http://h:8000/v1") == expected
    assert request_key("m/ö", messages, Grade, params, "HTTP://H:8000/v1/") == expected


@respx.mock
async def test_a_web_server_that_is_not_the_api_is_one_line_at_once(tmp_path):
    """`python -m http.server` answers a POST with 501 and an HTML page: not retried (the server cannot
    do it, asking again changes nothing) and named in one line with the page's title, not the page."""
    page = (
        '<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<title>Error response</title>\n</head>\n<body>\n'
        "<h1>Error response</h1>\n<p>Error code: 501</p>\n" + "<p>filler</p>\n" * 30 + "</body>\n</html>\n"
    )
    route = respx.post(URL).mock(return_value=httpx.Response(501, text=page, headers={"content-type": "text/html"}))
    fake = FakeTime()
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=fake, api_key=KEY, use_cache=False)
    with pytest.raises(LLMError) as e:
        await llm.ask(MESSAGES, Grade)
    assert route.call_count == 1 and fake.sleeps == []
    message = str(e.value)
    assert "\n" not in message and "HTTP 501" in message and "'Error response'" in message
    assert "an HTML page" in message and "<p>" not in message and len(message) < 400
    # a 503 still is what it says: try again later
    route.mock(side_effect=[httpx.Response(503, text="busy"), completion()])
    assert await llm.ask(MESSAGES, Grade) == Grade(grade=2, reasoning="ok")


class YieldingTime(FakeTime):
    async def sleep(self, seconds: float) -> None:  # the others run while one waits, as in real time
        self.sleeps.append(seconds)
        await asyncio.sleep(0)
        self.now += seconds


@respx.mock
async def test_calls_queued_behind_the_slots_wait_out_a_429_cooldown_too(tmp_path):
    """With 2 slots and 12 asks, a 429 (Retry-After 5) pauses every call, the queued ones included:
    nothing is sent into the cooldown (before, each queued call sent one more request into it)."""
    fake = YieldingTime()
    sent_at: list[float] = []

    def reply(request):
        sent_at.append(fake.now)
        if len(sent_at) <= 2:
            return error(429, headers={"retry-after": "5"})
        return completion()

    respx.post(URL).mock(side_effect=reply)
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=fake, api_key=KEY, use_cache=False, concurrency=2)
    answers = await asyncio.gather(*(llm.ask([{"role": "user", "content": f"q{i}"}], Grade) for i in range(12)))
    assert len(answers) == 12 and len(sent_at) == 14  # 12 answers + the two 429s, nothing more
    first_429 = sent_at[0]
    # inside the window: at most the two calls that were already sending when the first 429 came
    assert sum(t < first_429 + 5 for t in sent_at) <= 2, sent_at


def test_a_rate_limited_llm_serves_one_event_loop_after_another(tmp_path):
    """--rpm's limiter locked on the first loop; a second asyncio.run (the next stage) raised
    'bound to a different event loop'."""
    import respx as rx

    with rx.mock() as mock:
        mock.post(URL).mock(return_value=completion())
        fake = YieldingTime()
        llm = make_llm(
            tmp_path, BASE, "test-model", fake_time=fake, api_key=KEY, use_cache=False, rpm=60, concurrency=3
        )  # ten requests at once, then one a second: calls wait
        for _ in range(3):

            async def burst():
                return await asyncio.gather(
                    *(llm.ask([{"role": "user", "content": f"q{i}"}], Grade) for i in range(30))
                )

            assert len(asyncio.run(burst())) == 30


@respx.mock
async def test_content_sent_as_text_parts_is_read_and_other_shapes_are_invalid_not_a_traceback(tmp_path):
    parts = [{"type": "text", "text": '{"grade": 1, '}, {"type": "text", "text": '"reasoning": "parts"}'}]
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(
                200,
                json={
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": c}}],
                },
            )
            for c in (parts, {"grade": 1}, {"grade": 1}, {"grade": 1})
        ]
    )
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=False)
    assert await llm.ask(MESSAGES, Grade) == Grade(grade=1, reasoning="parts")
    with pytest.raises(LLMError, match=r"content is not text \(dict\)") as e:
        await llm.ask([{"role": "user", "content": "again"}], Grade)
    assert e.value.kind == "invalid" and route.call_count == 4


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_call_ends_at_its_deadline_whatever_the_server_does(tmp_path, monkeypatch, transport):
    """--timeout bounds each wait for bytes; a server that takes longer in all (a trickle, or one that
    never reads a large request: aiohttp has no write timeout) is stopped at the call's deadline."""
    import time

    from fake_llm import FakeLLM
    from ragassay.llm.ping import PingAnswer

    with FakeLLM(delay=4.0) as fake:
        llm = LLM(
            LLMConfig(model="fake", base_url=fake.url, use_cache=False, timeout=10, deadline=1.0, transport=transport)
        )
        start = time.monotonic()
        with pytest.raises(LLMError) as e:
            asyncio.run(llm.ask([{"role": "user", "content": "echo lanternfish"}], PingAnswer))
        assert time.monotonic() - start < 3.5 and fake.calls == 1
    assert e.value.kind == "transport" and "within the 1 s a call may take" in str(e.value)


def test_a_connection_that_breaks_is_not_called_a_failure_to_connect(tmp_path, monkeypatch):
    """A server that accepts, reads the request and hangs up: 'the connection broke off', in one line,
    on both transports (aiohttp reports it to openai as a connect timeout)."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port = srv.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        for transport in ("aiohttp", "httpx"):
            llm = LLM(
                LLMConfig(
                    model="m",
                    base_url=f"http://127.0.0.1:{port}/v1",
                    use_cache=False,
                    max_attempts=2,
                    transport=transport,
                ),
                sleep=FakeTime().sleep,
            )
            with pytest.raises(LLMError) as e:
                asyncio.run(llm.ask(MESSAGES, Grade))
            message = str(e.value)
            assert "the connection broke off with" in message and "could not connect" not in message, transport
            assert "\n" not in message and ("disconnected" in message or "reset by peer" in message), message
    finally:
        srv.close()


def test_a_very_short_key_is_not_redacted_everywhere():
    cfg = LLMConfig(model="m", base_url="http://127.0.0.1:8001/v1", api_key="1")
    assert cfg.public_base_url() == "http://127.0.0.1:8001/v1"
    assert LLMConfig(model="m", api_key="sk-secret-123456").secrets() == ["sk-secret-123456"]


def test_one_llm_used_by_two_threads_at_once(tmp_path, monkeypatch):
    """Each thread's event loop gets its own client and its own slots; before, the threads replaced
    each other's client mid-call (CancelledError on aiohttp, 'pop from an empty deque' on httpx)."""
    from concurrent.futures import ThreadPoolExecutor

    from fake_llm import FakeLLM
    from ragassay.llm.ping import PingAnswer

    monkeypatch.delenv("RAGASSAY_HTTP")
    with FakeLLM(delay=0.02) as fake:
        llm = LLM(LLMConfig(model="fake", base_url=fake.url, use_cache=False, concurrency=3))

        def burst(t: int) -> list[str]:
            async def asks():
                return await asyncio.gather(
                    *(
                        llm.ask([{"role": "user", "content": "echo lanternfish"}], PingAnswer, sample=t * 100 + i + 1)
                        for i in range(20)
                    )
                )

            return [a.echo for a in asyncio.run(asks())]

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(burst, (1, 2)))
        assert results == [["lanternfish"] * 20] * 2 and fake.calls == 40
        assert llm.max_in_flight <= 6


@respx.mock
async def test_an_answer_with_an_escaped_lone_surrogate_is_kept_as_valid_text(tmp_path):
    """JSON can escape half a character ("\\ud800"); UTF-8 files and SQLite cannot hold it. The
    answer is read with U+FFFD in its place, cached, and a later ask is answered from the cache."""
    content = '{"grade": 2, "reasoning": "half \\ud800 a pair, whole \\ud83d\\ude00"}'
    route = respx.post(URL).mock(return_value=completion(content))
    llm = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=True)
    answer = await llm.ask(MESSAGES, Grade)
    assert answer.reasoning == "half \ufffd a pair, whole \U0001f600"
    again = make_llm(tmp_path, BASE, "test-model", fake_time=FakeTime(), api_key=KEY, use_cache=True)
    assert await again.ask(MESSAGES, Grade) == answer and route.call_count == 1


def test_a_record_with_a_lone_surrogate_is_journalled_and_read_back_the_same(tmp_path):
    from ragassay.runtime.engine import OutputStore

    out = tmp_path / "o.jsonl"
    store = OutputStore(out, lambda r: r["id"])
    record = {"id": "a", "key": "k1", "status": "ok", "text": "from elsewhere \ud800"}
    store.append([record])
    assert list(store.finalize(["k1"])) == [record]
    assert out.read_bytes().decode("utf-8")  # valid UTF-8 on disk
    assert list(OutputStore(out, lambda r: r["id"]).records()) == [record]

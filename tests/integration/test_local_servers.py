"""The servers people run: what they say of themselves (slots, context), the modes they take, the
answers small models write, the prompts they cut. Unit cases with respx and a stdlib server on
127.0.0.1; tests/test_server_habits.py runs every stage against each habit end to end."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import respx
from pydantic import BaseModel, Field

from fake_llm import SERVE_POLL, make_llm
from helpers import nonempty
from ragassay.llm import LLMConfig, LLMError
from ragassay.llm.reading import Decision, Explanation, Explanations, read_answer
from ragassay.llm.server_info import ServerInfo, asks, discover, read_models, read_props

LOCAL = "http://127.0.0.1:9/v1"  # never listened to: respx answers


class Verdict(BaseModel):
    reasoning: Explanation
    claims: Explanations
    grade: Decision = Field(ge=0, le=3)


# ------------------------------------------------------------------------------ reading answers


@pytest.mark.parametrize(
    "reply, grade, how",
    [
        ('{"reasoning": "r", "claims": [], "grade": 2}', 2, "whole"),
        (
            'Here is my assessment:\n```json\n{"reasoning": "r", "claims": [], "grade": 3}\n```\nI hope this helps.',
            3,
            "fence",
        ),
        ('```JSON\n{"reasoning": "r", "claims": [], "grade": 1}```', 1, "fence"),
        ('Sure! {"reasoning": {"aspect": "price"}, "claims": "one claim", "grade": 0} Done.', 0, "prose"),
        ('Grade: {"reasoning": ["a", {"b": 1}], "claims": {"x": "y"}, "grade": "2"}', 2, "prose"),
        ('{"reasoning": 42, "claims": [1, true], "grade": 3.0}', 3, "whole"),
    ],
)
def test_an_answer_is_found_where_small_models_put_it(reply, grade, how):
    answer, found, problem = read_answer(reply, Verdict)
    assert problem == "" and answer.grade == grade and found == how
    assert isinstance(answer.reasoning, str) and all(isinstance(c, str) for c in answer.claims)


def test_explanations_keep_every_part_as_text():
    answer, _, _ = read_answer('{"reasoning": ["first", {"k": ["a", "b"]}], "claims": {"c1": 1}, "grade": 1}', Verdict)
    assert answer.reasoning == "first\nk: a\nb" and answer.claims == ["c1: 1"]
    answer, _, _ = read_answer('{"reasoning": "x", "claims": "  ", "grade": 1}', Verdict)
    assert answer.claims == []  # a blank string is no claim


@pytest.mark.parametrize(
    "reply, why",
    [
        ('{"reasoning": "r", "claims": [], "grade": true}', "not true or false"),
        ('{"reasoning": "r", "claims": [], "grade": 2.5}', "fractional"),
        ('{"reasoning": "r", "claims": [], "grade": "two"}', "valid integer"),
        ('{"reasoning": "r", "claims": [], "grade": 4}', "less than or equal to 3"),
        (
            'I would say {"reasoning": "a", "claims": [], "grade": 1} or maybe {"reasoning": "a", "claims": [], '
            '"grade": 3}',
            "more than one answer that differ",
        ),
        ("The passage is relevant, grade 3.", "not valid JSON"),
        ("[1, 2, 3]", "not an object"),
        ('{"reasoning": "r", "grade": 1}', "claims: Field required"),
    ],
)
def test_a_decision_is_read_strictly_and_a_doubtful_reply_decides_nothing(reply, why):
    answer, _, problem = read_answer(reply, Verdict)
    assert answer is None and why in problem


def test_the_same_answer_twice_in_a_reply_is_one_answer():
    one = '{"reasoning": "a", "claims": [], "grade": 2}'
    answer, how, _ = read_answer(f"```json\n{one}\n```\nAgain: {one}", Verdict)
    assert answer.grade == 2 and how == "fence"


# ------------------------------------------------------------------------------------ modes


def _completion(content: str, prompt_tokens: int | None = 40) -> httpx.Response:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
    }
    if prompt_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}
    return httpx.Response(200, json=body)


GOOD = '{"reasoning": "r", "claims": [], "grade": 2}'
MESSAGES = [{"role": "user", "content": "grade this"}]


@pytest.mark.parametrize(
    "status, body",
    [
        (
            500,
            {
                "detail": [
                    {
                        "type": "literal_error",
                        "loc": ["body", "response_format", "type"],
                        "msg": "Input should be 'text' or 'json_object'",
                    }
                ]
            },
        ),  # llama-cpp-python
        (
            400,
            {"object": "error", "message": "response_format json_schema is not supported", "type": "BadRequestError"},
        ),
        (422, {"error": {"message": "Unsupported value: 'response_format.type' json_schema"}}),
        (501, {"error": {"message": "structured outputs are not implemented"}}),
    ],
)
@respx.mock
async def test_a_refused_format_falls_back_whatever_its_status_and_is_remembered(tmp_path, status, body):
    seen = []

    def handler(request):
        sent = json.loads(request.content)
        seen.append(sent.get("response_format", {}))
        if sent.get("response_format", {}).get("type") == "json_schema":
            return httpx.Response(status, json=body)
        return _completion(GOOD)

    respx.post("http://srv.test/v1/chat/completions").mock(side_effect=handler)
    llm = make_llm(tmp_path, "http://srv.test/v1", "model-a")
    assert (await llm.ask(MESSAGES, Verdict)).grade == 2
    assert [f.get("type") for f in seen] == ["json_schema", "json_object"] and "schema" in seen[1]
    assert llm.mode == "json_object_schema" and f"HTTP {status}" in llm.mode_reason
    llm.close()
    later = make_llm(tmp_path, "http://srv.test/v1", "model-a")  # a later run, the same cache
    assert later.mode == "json_object_schema" and later.mode_reason.startswith("remembered from an earlier run")
    await later.ask([{"role": "user", "content": "another"}], Verdict)
    assert [f.get("type") for f in seen] == ["json_schema", "json_object", "json_object"]  # no json_schema again
    other = make_llm(tmp_path, "http://srv.test/v1", "model-b")  # another model: its own memory
    assert other.mode == "json_schema"
    for x in nonempty([later, other]):
        x.close()


@respx.mock
async def test_every_mode_is_tried_once_and_the_last_refusal_is_the_error(tmp_path):
    seen = []

    def handler(request):
        sent = json.loads(request.content)
        fmt = sent.get("response_format")
        seen.append(None if fmt is None else (fmt["type"], "schema" in fmt))
        if fmt is None:
            return _completion(GOOD)
        return httpx.Response(500, json={"error": {"message": f"grammar error: {fmt['type']} unsupported"}})

    respx.post("http://srv.test/v1/chat/completions").mock(side_effect=handler)
    llm = make_llm(tmp_path, "http://srv.test/v1", "m")
    assert (await llm.ask(MESSAGES, Verdict)).grade == 2
    assert seen == [("json_schema", False), ("json_object", True), ("json_object", False), None]
    assert llm.mode == "prompt"


@respx.mock
async def test_a_context_refusal_is_not_a_format_refusal_and_later_prompts_too_big_are_not_sent(tmp_path):
    route = respx.post("http://srv.test/v1/chat/completions").mock(
        return_value=httpx.Response(
            400,
            json={
                "object": "error",
                "message": "This model's maximum context length is 512 tokens. However, you "
                "requested 900 tokens (800 in the messages, 100 in the completion). Please reduce the length. "
                "response_format was json_schema",
            },
        )
    )
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    with pytest.raises(LLMError) as e:
        await llm.ask(MESSAGES, Verdict)
    assert e.value.kind == "context" and "context of 512 tokens" in str(e.value)
    assert llm.mode == "json_schema" and route.call_count == 1  # not taken for a refused format
    big = [{"role": "user", "content": "word " * 1000}]  # ~1,250 estimated tokens, far over 512
    with pytest.raises(LLMError) as e:
        await llm.ask(big, Verdict)
    assert e.value.kind == "context" and "not sent" in str(e.value) and route.call_count == 1


@pytest.mark.parametrize(
    "status, body, context",
    [
        (
            422,
            {
                "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4031 "
                "`inputs` tokens and 200 `max_new_tokens`",
                "error_type": "validation",
            },
            4096,
        ),  # TGI
        (
            422,
            {
                "error": "Input validation error: `inputs` must have less than 1024 tokens. Given: 1500",
                "error_type": "validation",
            },
            1024,
        ),  # TGI, its max_input_tokens
        (
            400,
            {
                "object": "error",
                "message": "The input (9000 tokens) is longer than the model's context length (8192 tokens).",
                "type": "BadRequestError",
            },
            8192,
        ),  # SGLang
        (
            400,
            {
                "error": "Trying to keep the first 5200 tokens when context the overflows. However, the model is "
                "loaded "
                "with context length of only 4096 tokens, which is not enough."
            },
            4096,
        ),  # LM Studio
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "request (3000 tokens) exceeds the available context size (2,048 "
                    "tokens), try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
            2048,
        ),  # llama-server
    ],
)
@respx.mock
async def test_each_servers_words_for_a_prompt_too_long_name_its_context(tmp_path, status, body, context):
    respx.post("http://srv.test/v1/chat/completions").mock(return_value=httpx.Response(status, json=body))
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    with pytest.raises(LLMError) as e:
        await llm.ask(MESSAGES, Verdict)
    assert e.value.kind == "context" and f"the server's context of {context} tokens" in str(e.value)
    assert llm.context_limit == context and llm.mode == "json_schema"  # a length, not a refused format


@pytest.mark.parametrize(
    "body",
    [
        {"error": "Input validation error: `max_new_tokens` must be <= 4096. Given: 5000", "error_type": "validation"},
        {"error": {"message": "max_tokens must be at least 1, got 0", "type": "invalid_request_error"}},
        {"error": {"message": "Invalid value for 'temperature': 3 is greater than the maximum of 2 tokens"}},
    ],
)
@respx.mock
async def test_a_refusal_that_is_not_about_the_context_names_no_context(tmp_path, body):
    respx.post("http://srv.test/v1/chat/completions").mock(return_value=httpx.Response(422, json=body))
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    with pytest.raises(LLMError) as e:
        await llm.ask(MESSAGES, Verdict)
    assert e.value.kind == "request" and llm.context_limit is None
    assert str(body["error"] if isinstance(body["error"], str) else body["error"]["message"]) in str(e.value)


@pytest.mark.parametrize("reported, cut", [(300, True), (2048, False), (120, False), (None, False), (599, True)])
@respx.mock
async def test_a_prompt_the_server_read_in_part_never_labels(tmp_path, reported, cut):
    respx.post("http://srv.test/v1/chat/completions").mock(return_value=_completion(GOOD, reported))
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    prompt = [{"role": "user", "content": "x" * 5000}]  # ~1,250 estimated tokens (with the schema, more)
    if not cut:
        assert (await llm.ask(prompt, Verdict)).grade == 2
        return
    with pytest.raises(LLMError) as e:
        await llm.ask(prompt, Verdict)
    assert e.value.kind == "cut" and f"the server read {reported:,} of about" in str(e.value)
    assert "num_ctx" in str(e.value)


@respx.mock
async def test_a_short_prompt_is_never_called_cut(tmp_path):
    respx.post("http://srv.test/v1/chat/completions").mock(return_value=_completion(GOOD, 260))
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    assert (await llm.ask([{"role": "user", "content": "short"}], Verdict)).grade == 2


@respx.mock
async def test_a_reask_that_returns_the_same_bytes_is_not_sent_again(tmp_path):
    route = respx.post("http://srv.test/v1/chat/completions").mock(
        return_value=_completion('{"reasoning": "r", "claims": [], "grade": 7}')
    )
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    with pytest.raises(LLMError) as e:
        await llm.ask(MESSAGES, Verdict)
    assert route.call_count == 2 and "repeated an earlier one byte for byte" in str(e.value)
    assert llm.usage.total().reasked == 1


# ------------------------------------------------------------------------------ server info


@pytest.mark.parametrize(
    "url, asked",
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://10.0.0.5/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://my-proxy.example.com/v1", False),
        (None, False),
        ("http://8.8.8.8/v1", False),
    ],
)
def test_only_servers_on_this_machine_or_network_are_asked(url, asked):
    assert asks(url) is asked


def test_what_llama_cpp_and_vllm_say_is_read():
    assert read_props({"total_slots": 4, "default_generation_settings": {"n_ctx": 8192}}) == ServerInfo(
        8192, 4, "/props"
    )
    assert read_props({"total_slots": 1, "n_ctx": 2048}).context == 2048
    assert read_props({"total_slots": True}).slots is None and read_props([1]) == ServerInfo()
    models = {"data": [{"id": "other", "max_model_len": 4096}, {"id": "qwen", "max_model_len": 32768}]}
    assert read_models(models, "qwen") == ServerInfo(32768, None, "/v1/models")
    assert read_models(models, "missing") == ServerInfo() and read_models({"data": "x"}, "qwen") == ServerInfo()


class _Server:
    """A stdlib server answering GET pages with the bodies given (404 otherwise) and chat calls
    with one answer, recording every request line."""

    def __init__(self, pages: dict[str, object], posts: dict[str, object] | None = None):
        self.seen: list[str] = []
        posts = posts or {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                outer.seen.append(f"GET {self.path}")
                self._send(200, pages[self.path]) if self.path in pages else self._send(404, {"error": "no"})

            def do_POST(self):
                n = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(n))
                if not self.path.endswith("/chat/completions"):
                    outer.seen.append(f"POST {self.path} {json.dumps(body)}")
                    self._send(200, posts[self.path]) if self.path in posts else self._send(404, {"error": "no"})
                    return
                outer.seen.append(f"POST {self.path} {body.get('response_format', {}).get('type')}")
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "m",
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": GOOD}}
                        ],
                    },
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": SERVE_POLL}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


async def test_a_local_servers_slots_and_context_set_the_calls_in_flight_and_what_is_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HTTP", "httpx")
    server = _Server({"/props": {"total_slots": 2, "default_generation_settings": {"n_ctx": 300}}})
    try:
        info = await discover(server.url, "m")
        assert info == ServerInfo(300, 2, "/props")
        llm = make_llm(None, server.url, "m", use_cache=False)
        assert (await llm.ask(MESSAGES, Verdict)).grade == 2
        assert llm.server == info and llm.slots == 2 and llm.context_limit == 300
        assert llm._semaphore()._value == 2  # the default 8 calls in flight became the server's 2 slots
        with pytest.raises(LLMError, match="not sent"):
            await llm.ask([{"role": "user", "content": "many words " * 300}], Verdict)
        # asked once by discover() above and once by the LLM, before its first call: /props said both, so no more
        assert [s for s in server.seen if s.startswith("GET")] == ["GET /props", "GET /props"]
        assert sum(s.startswith("POST") for s in server.seen) == 1  # the big prompt was never sent
        given = make_llm(None, server.url, "m", use_cache=False, concurrency=5, given=frozenset({"concurrency"}))
        await given.ask(MESSAGES, Verdict)
        assert given.slots is None and given._semaphore()._value == 5  # --concurrency given wins
    finally:
        server.close()


async def test_a_server_that_says_nothing_is_used_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HTTP", "httpx")
    server = _Server({})
    try:
        llm = make_llm(None, server.url, "m", use_cache=False)
        assert (await llm.ask(MESSAGES, Verdict)).grade == 2
        assert llm.server == ServerInfo() and llm.context_limit is None and llm._semaphore()._value == 8
        assert [s for s in server.seen if s.startswith("GET")] == ["GET /props", "GET /v1/models"]  # both asked, once
        assert [s for s in server.seen if "/api/show" in s] == ['POST /api/show {"model": "m"}']  # and Ollama's page
        await llm.ask([{"role": "user", "content": "again"}], Verdict)
        assert sum(s.startswith("GET") for s in server.seen) == 2 and sum("/api/show" in s for s in server.seen) == 1
    finally:
        server.close()


@pytest.mark.parametrize(
    "parameters, context",
    [
        ('num_ctx                        8192\nstop                           "<|im_end|>"', 8192),
        ('stop "<|im_end|>"\ntemperature 0.7', None),  # no num_ctx of its own: the server's default, unknown
        ("num_ctx 2048", 2048),
    ],
)
async def test_ollamas_show_page_says_the_context_its_model_runs_with(tmp_path, monkeypatch, parameters, context):
    monkeypatch.setenv("RAGASSAY_HTTP", "httpx")
    show = {
        "modelfile": "FROM qwen",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "model_info": {"qwen2.context_length": 32768},
    }  # what the model could take, not what it is given
    server = _Server(
        {"/v1/models": {"object": "list", "data": [{"id": "qwen2.5:1.5b", "object": "model"}]}},
        posts={"/api/show": show},
    )
    try:
        info = await discover(server.url, "qwen2.5:1.5b")
        assert info.context == context and info.slots is None
        assert info.said_by == ("/api/show" if context else "")
        assert 'POST /api/show {"model": "qwen2.5:1.5b"}' in server.seen
    finally:
        server.close()


async def test_a_server_whose_props_say_the_context_is_not_asked_for_ollamas_page(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HTTP", "httpx")
    server = _Server({"/props": {"total_slots": 1, "n_ctx": 4096}}, posts={"/api/show": {"parameters": "num_ctx 1"}})
    try:
        assert await discover(server.url, "m") == ServerInfo(4096, 1, "/props")
        assert not any("/api/show" in s for s in server.seen)
    finally:
        server.close()


def test_a_local_calls_timeout_grows_with_its_prompt_unless_timeout_is_given():
    from ragassay.llm import LLM

    small = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100}
    big = {"messages": [{"role": "user", "content": "x" * 80_000}], "max_tokens": 1000}
    local = LLM(LLMConfig(model="m", base_url="http://127.0.0.1:8080/v1", use_cache=False))
    assert local.call_timeout(small) == 60.0 and local.call_timeout(big) == pytest.approx(20_000 / 20 + 1000 / 4)
    told = LLM(LLMConfig.from_env(model="m", base_url="http://127.0.0.1:8080/v1", use_cache=False, timeout=30))
    assert told.call_timeout(big) is None
    hosted = LLM(LLMConfig(model="m", base_url="https://api.openai.com/v1", api_key="sk-x", use_cache=False))
    assert hosted.call_timeout(big) is None


@respx.mock
async def test_prompts_of_other_sizes_read_as_one_count_were_capped_but_a_shared_count_by_chance_is_not(tmp_path):
    counts = iter([700, 700])
    respx.post("http://srv.test/v1/chat/completions").mock(side_effect=lambda request: _completion(GOOD, next(counts)))
    llm = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    # ~875 and ~1,075 estimated tokens, each read as 700 (0.80 and 0.65: short of 0.85, over the plain 0.6)
    assert (await llm.ask([{"role": "user", "content": "a" * 3500}], Verdict)).grade == 2  # 0.8 alone decides nothing
    with pytest.raises(LLMError) as e:
        await llm.ask([{"role": "user", "content": "b" * 4300}], Verdict)
    assert e.value.kind == "cut" and "were both read as 700" in str(e.value)
    counts = iter([1000, 1000])  # prompts read at their usual share that happen to share a count: no cut
    respx.post("http://srv.test/v1/chat/completions").mock(side_effect=lambda request: _completion(GOOD, next(counts)))
    other = make_llm(tmp_path, "http://srv.test/v1", "m", use_cache=False)
    assert (await other.ask([{"role": "user", "content": "c" * 3600}], Verdict)).grade == 2
    assert (await other.ask([{"role": "user", "content": "d" * 4300}], Verdict)).grade == 2


def test_the_progress_bar_says_calls_in_flight_and_tokens_a_second():
    import time as clock

    from ragassay.llm import LLM
    from ragassay.runtime.engine import flow_note

    llm = LLM(LLMConfig(model="m", base_url="http://127.0.0.1:8080/v1", use_cache=False))
    llm.in_flight = 3
    llm.usage.stage("judge").completion_tokens = 900
    note = flow_note([llm], clock.monotonic() - 100)
    assert note.startswith("3 in flight, ") and 8.5 < float(note.split(", ")[1].split()[0]) <= 9.0
    assert flow_note([], clock.monotonic()) == ""


async def test_a_server_that_never_answers_is_asked_one_question_not_three(monkeypatch):
    """A port that accepts and never answers: the first question's timeout ends the asking (the
    run goes on as with a server that said nothing), so it costs one wait, not one a page."""
    import socket

    from ragassay.llm import server_info

    monkeypatch.setattr(server_info, "ASK_TIMEOUT", 0.5)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(silent.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        info = await discover(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", "m")
    finally:
        silent.close()
        for conn in accepted:
            conn.close()
    assert info == ServerInfo() and len(accepted) == 1

"""A small, competent OpenAI-compatible server for end-to-end tests (stdlib only, 127.0.0.1).

It reads the structured-output schema name of each request and answers the way a careful model
would, from the delimited text in the prompt: relevance by word overlap of query and passage,
coverage nuggets from the reference answer, answer checks by comparing response and reference,
and questions written from a passage's first sentence. It counts every request it receives, so a
test can compare the calls a dry run predicted with the calls a run made.

    with FakeLLM() as server:
        main(["judge", ..., "--base-url", server.url, "--model", "fake"])
        server.calls  # requests received
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

WORD = re.compile(r"[a-z0-9]{4,}")
_FRAME = {"work", "customer", "help", "with", "that", "this", "your", "from", "have", "will"}  # the fake's own frame words


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def block(text: str, label: str) -> str:
    m = re.search(rf"<<<{label}[^\n]*\n(.*?)\n{label.split()[0]}>>>", text, re.S)  # closed by its first word
    return m.group(1) if m else ""


def passages(text: str) -> list[tuple[str, str]]:
    return re.findall(r"<<<PASSAGE id=(\S+)\n(.*?)\nPASSAGE>>>", text, re.S)


def grade(query: str, passage: str) -> int:
    return min(3, len(words(query) & words(passage)))


def chat_reply(obj: dict | str | None, finish_reason: str = "stop", prompt_tokens: int = 50,
               completion_tokens: int = 20, refusal: str | None = None):
    """An OpenAI chat completion carrying ``obj`` as JSON (a raw string or None as is), for respx routes."""
    import httpx
    content = obj if obj is None or isinstance(obj, str) else json.dumps(obj)
    return httpx.Response(200, json={
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}})


def make_llm(tmp_path, base_url: str, model: str = "m", *, sleep=None, fake_time=None, client=None, **settings):
    """The LLM every test builds: retry sleeps skipped (or a ``fake_time`` with ``sleep`` and
    ``clock``), the answer cache under ``tmp_path`` (no cache when it is None), a test key; ``client``
    replaces the HTTP client (then no endpoint is needed)."""
    from ragassay.llm import LLM, LLMConfig

    async def no_sleep(_):
        return None
    settings.setdefault("api_key", "sk-test")
    if tmp_path is None:
        settings.setdefault("use_cache", False)
    else:
        settings.setdefault("cache_path", tmp_path / "cache.sqlite")
    timing = {"sleep": fake_time.sleep, "clock": fake_time.clock} if fake_time is not None else \
        {"sleep": sleep or no_sleep}
    return LLM(LLMConfig(model=model, base_url=base_url, **settings), client=client, **timing)


def answer_for(schema: str, user: str, system: str = "") -> dict[str, Any]:
    if schema == "RelevanceAnswer":
        g = grade(block(user, "QUERY"), block(user, "PASSAGE"))
        return {"intent": "what the query asks", "match": f"{g} shared terms", "trust": "plain help text", "grade": g}
    if schema == "BatchAnswer":
        q = block(user, "QUERY")
        return {"judgments": [{"chunk_id": cid, "intent": "need", "match": "overlap", "trust": "ok",
                               "grade": grade(q, text)} for cid, text in passages(user)]}
    if schema == "NuggetList":  # the sentences of the reference (or of the relevant passages, or the question)
        source = block(user, "REFERENCE ANSWER") or " ".join(t for _, t in passages(user)) or block(user, "QUESTION")
        sentences = [x.strip() for x in re.split(r"(?<=[.!?;])\s+", source) if x.strip()]
        return {"nuggets": sentences[:4] or ["the answer"]}
    if schema == "ImportanceAnswer":  # the first nugget is vital, the rest are okay
        numbers = re.findall(r"^(\d+)\. ", block(user, "NUGGETS"), re.M)
        return {"labels": [{"number": int(n), "importance": "vital" if n == "1" else "okay"} for n in numbers]}
    if schema == "AssignmentAnswer":
        nuggets = re.findall(r"^(\d+)\. (.*)$", block(user, "NUGGETS"), re.M)
        given = passages(user)
        out = []
        for n, text in nuggets:
            ids = [cid for cid, t in given if len(words(text) & words(t)) >= 2]
            out.append({"number": int(n), "support": "support" if ids else "not_support", "chunk_ids": ids})
        return {"assignments": out}
    if schema == "AnswerVerdict":
        ref, resp = words(block(user, "REFERENCE")), words(block(user, "RESPONSE"))
        share = len(ref & resp) / max(1, len(ref))
        label = "correct" if share >= 0.6 else "partial" if share >= 0.3 else "hallucinated"
        given = passages(user)
        has_answer = len(ref & words(" ".join(t for _, t in given))) >= 0.6 * len(ref) if given else None
        return {"reference_facts": "the reference", "response_claims": "the response", "comparison": f"{share:.2f}",
                "label": label, "grounded": "supported" if given else None, "context_has_answer": has_answer,
                "unsupported_claims": []}
    if schema == "GeneratedQuestion":  # one passage: its first sentence; several: all of them compared
        given = passages(user)
        body = [(cid, text.strip().split("\n")[-1]) for cid, text in given]  # past a title line
        sentences = [(cid, re.split(r"(?<=[.!?])\s", text)[0]) for cid, text in body]
        answer = " ".join(s for _, s in sentences)
        hard = len(given) > 1
        if hard:  # one topic word from each passage: no passage alone holds them all
            topic = [sorted(words(sent) - _FRAME, key=lambda w: (-len(w), w))[0] for _, sent in sentences]
        else:
            topic = sorted(words(sentences[0][1]) - _FRAME, key=lambda w: (-len(w), w))[:2]
        if "keyword query" in system:
            question = " ".join(topic) + " customer help"
        else:
            question = f"How do {' and '.join(topic)} work for a customer?"
        return {"question": question, "answer": answer, "kind": "comparison" if hard else "how_to",
                "evidence": [{"chunk_id": cid, "quote": s[:60], "role": "answer"} for cid, s in sentences]}
    if schema == "BlindAnswer":  # answers from the passages: their first sentences, or "cannot tell"
        given = passages(user)
        question = words(block(user, "QUESTION")) - _FRAME
        hits = [re.split(r"(?<=[.!?])\s", t.strip().split("\n")[-1])[0] for _, t in given]
        ok = bool(given) and question <= words(" ".join(t for _, t in given))  # every topic word is there
        return {"own_answer": " ".join(hits) if ok else "", "answerable": ok, "reason": "from the passages"}
    if schema == "Critique":  # a question naming no author or essay is fine
        vague = re.search(r"\bthe (author|essay|writer|article)\b", block(user, "QUESTION"), re.I)
        return {"self_contained": 1 if vague else 5, "clear": 4, "realistic": 4,
                "reason": "refers to an unnamed text" if vague else "a question a customer could ask"}
    if schema == "SameAnswer":  # the same when the second holds (nearly) every word of the first
        first, second = words(block(user, "FIRST ANSWER")), words(block(user, "SECOND ANSWER"))
        same = bool(first) and len(first & second) >= 0.9 * len(first)
        return {"same": same, "reason": "compared word by word"}
    if schema == "PingAnswer":
        m = re.search(r"\b([a-z]{6,})\b", user)
        return {"ok": True, "echo": "lanternfish" if "lanternfish" in user else (m.group(1) if m else "")}
    raise ValueError(f"the fake model does not know the schema {schema!r}")


def reply_to(body: dict, reply_id: str = "fake") -> dict:
    """The chat completion the fake model gives to one request body."""
    fmt = body.get("response_format") or {}
    schema = fmt.get("json_schema", {}).get("name", "")
    user = body["messages"][-1]["content"]
    system = body["messages"][0]["content"] if len(body["messages"]) > 1 else ""
    content = json.dumps(answer_for(schema, user, system))
    return {"id": reply_id, "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": sum(tokens(m["content"]) + 3 for m in body["messages"]),
                      "completion_tokens": tokens(content), "total_tokens": 0}}


def tokens(text: str) -> int:
    """The fake's own tokenizer (words and single punctuation marks), unlike any estimate's rule, so that
    a test can tell an estimate calibrated on its counts from a guess."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def run_batch(requests: str | Path, output: str | Path, fail: Callable[[dict], str | None] = lambda line: None) -> int:
    """A local stand-in for vLLM's ``run_batch`` / the Batch API: answers every request line of a
    batch input file with the fake model and writes the output file in their format. ``fail(line)``
    returning a message makes that line an error line instead. Returns the lines answered."""
    out = []
    lines = [json.loads(x) for x in Path(requests).read_text().splitlines() if x.strip()]
    for i, line in enumerate(lines):
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions", line
        why = fail(line)
        if why:
            out.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"], "response": None,
                        "error": {"code": "server_error", "message": why}})
        else:
            out.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "request_id": f"req_{i}", "body": reply_to(line["body"])},
                        "error": None})
    Path(output).write_text("".join(json.dumps(x) + "\n" for x in out))
    return len(lines)


class FakeLLM:
    """Start with ``with FakeLLM() as s``; ``s.url`` is the base URL; ``delay`` slows each answer;
    ``refuse`` makes every answer a refusal."""

    def __init__(self, delay: float = 0.0, refuse: str | None = None, port: int = 0):
        self.delay = delay
        self.refuse = refuse  # when set: every answer is this refusal (a model that rejects everything)
        self.calls = 0
        self.requests: list[dict] = []
        self.in_flight = 0  # requests being answered now
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                with server._lock:
                    server.in_flight += 1
                try:
                    self.answer()
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def answer(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with server._lock:
                    server.calls += 1
                    server.requests.append(body)
                if server.delay:
                    time.sleep(server.delay)
                if server.refuse is not None:
                    reply = {"id": "refused", "object": "chat.completion", "created": 0, "model": body.get("model"),
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": None, "refusal": server.refuse}}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
                else:
                    reply = reply_to(body, f"fake-{server.calls}")
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a killed run, a cancelled call): nothing to tell

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def settled_calls(self, quiet: float = 0.3, timeout: float = 10.0) -> int:
        """The calls received once the server has been idle for ``quiet`` seconds: a run that stopped
        early may leave requests on the wire that arrive after it returned."""
        deadline = time.monotonic() + timeout
        seen, since = self.calls, time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if self.in_flight or self.calls != seen:
                seen, since = self.calls, time.monotonic()
            elif time.monotonic() - since >= quiet:
                break
        return self.calls

    def __enter__(self) -> FakeLLM:
        import os
        self._thread.start()
        # the product's default transport: a real server needs no interception (conftest sets httpx for respx)
        self._transport = os.environ.get("RAGASSAY_HTTP")
        os.environ["RAGASSAY_HTTP"] = "aiohttp"
        return self

    def __exit__(self, *exc: Any) -> None:
        import os
        if self._transport is None:
            os.environ.pop("RAGASSAY_HTTP", None)
        else:
            os.environ["RAGASSAY_HTTP"] = self._transport
        self._httpd.shutdown()
        self._httpd.server_close()


def dead_url() -> str:
    """A local address where nothing listens (connection refused at once)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


if __name__ == "__main__":  # run by hand or by a subprocess test: python tests/fake_llm.py [delay]
    import sys
    with FakeLLM(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as s:
        print(s.url, flush=True)
        while True:
            time.sleep(3600)

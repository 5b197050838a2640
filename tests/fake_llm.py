"""A small, competent OpenAI-compatible server for end-to-end tests (stdlib only, 127.0.0.1).

It reads the structured-output schema name of each request and answers the way a careful model
would, from the delimited text in the prompt: relevance by word overlap of query and passage,
coverage nuggets from the reference answer, answer checks by comparing response and reference,
and questions written from a passage's first sentence. It counts every request it receives, so a
test can compare the calls a dry run predicted with the calls a run made.

    with FakeLLM() as server:
        main(["judge", ..., "--base-url", server.url, "--model", "fake"])
        server.calls  # requests received

``FakeLLM(habit=...)`` serves the same answers the way a real server does (see ``HABITS``): refusing a
response format with its own status and body (llama-cpp-python, older vLLM, TGI), answering in prose,
writing lists where a sentence of reasoning is asked, sending no usage, cutting a prompt longer than
its context from the front (Ollama), refusing one that does not fit (vLLM, llama-server), repeating an
unusable reply byte for byte. Without ``habit`` it is the OpenAI-like server it always was.
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

# How often a test's HTTP server (serve_forever) looks whether shutdown() was asked: at the standard library's
# 0.5 s, leaving every `with FakeLLM()` block cost up to half a second of waiting (about 0.5 s when the block
# is short), several minutes over the suite; at 0.01 s the idle server's polling costs nothing measurable.
SERVE_POLL = 0.01

WORD = re.compile(r"[a-z0-9]{4,}")
_FRAME = {
    "work",
    "customer",
    "help",
    "with",
    "that",
    "this",
    "your",
    "from",
    "have",
    "will",
}  # the fake's own frame words


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def block(text: str, label: str) -> str:
    m = re.search(rf"<<<{label}[^\n]*\n(.*?)\n{label.split()[0]}>>>", text, re.S)  # closed by its first word
    return m.group(1) if m else ""


def passages(text: str) -> list[tuple[str, str]]:
    return re.findall(r"<<<PASSAGE id=(\S+)\n(.*?)\nPASSAGE>>>", text, re.S)


def grade(query: str, passage: str) -> int:
    return min(3, len(words(query) & words(passage)))


def short_label(reference: str, response: str) -> str:
    """A label from the words the response shares with the reference, or with its best accepted
    answer when it lists several; a response that says it does not know abstains."""
    accepted = [a[2:] for a in reference.split("\n") if a.startswith("- ")] or [reference]
    said = words(response)
    if not said or re.search(r"\b(do not|don't|cannot) (know|say|tell)\b", response, re.I):
        return "abstained"
    share = max(len(words(a) & said) / max(1, len(words(a))) for a in accepted)
    return "correct" if share >= 0.6 else "partial" if share >= 0.3 else "hallucinated"


def chat_reply(
    obj: dict | str | None,
    finish_reason: str = "stop",
    prompt_tokens: int = 50,
    completion_tokens: int = 20,
    refusal: str | None = None,
):
    """An OpenAI chat completion carrying ``obj`` as JSON (a raw string or None as is), for respx routes."""
    import httpx

    content = obj if obj is None or isinstance(obj, str) else json.dumps(obj)
    return httpx.Response(
        200,
        json={
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


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
    timing = (
        {"sleep": fake_time.sleep, "clock": fake_time.clock} if fake_time is not None else {"sleep": sleep or no_sleep}
    )
    return LLM(LLMConfig(model=model, base_url=base_url, **settings), client=client, **timing)


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip().split("\n")[-1])[0]


def answer_for(schema: str, user: str, system: str = "") -> dict[str, Any]:  # noqa: C901 (one branch per schema)
    """The fake model's answer to one prompt, by the answer's schema: one flat branch per schema the
    stages ask for, each reading the prompt as a competent model would."""
    if schema == "RelevanceAnswer":
        g = grade(block(user, "QUERY"), block(user, "PASSAGE"))
        return {"intent": "what the query asks", "match": f"{g} shared terms", "trust": "plain help text", "grade": g}
    if schema == "ShortRelevance":  # the short prompts' and users' files' schema: the grade alone
        g = grade(block(user, "QUERY"), block(user, "PASSAGE"))
        return {"reasoning": f"{g} shared terms", "grade": g}
    if schema == "ShortVerdict":
        return {
            "reasoning": "compared with the reference",
            "label": short_label(block(user, "REFERENCE"), block(user, "RESPONSE")),
        }
    if schema == "BatchAnswer":
        q = block(user, "QUERY")
        return {
            "judgments": [
                {"chunk_id": cid, "intent": "need", "match": "overlap", "trust": "ok", "grade": grade(q, text)}
                for cid, text in passages(user)
            ]
        }
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
        if re.fullmatch(r"\s*i (do not|don't) know\.?\s*", block(user, "RESPONSE"), re.I):
            label = "abstained"  # a plain "I don't know" declines, asserting nothing
        given = passages(user)
        has_answer = len(ref & words(" ".join(t for _, t in given))) >= 0.6 * len(ref) if given else None
        return {
            "reference_facts": "the reference",
            "response_claims": "the response",
            "comparison": f"{share:.2f}",
            "label": label,
            "grounded": "supported" if given else None,
            "context_has_answer": has_answer,
            "unsupported_claims": [],
        }
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
        return {
            "question": question,
            "answer": answer,
            "kind": "comparison" if hard else "how_to",
            "evidence": [{"chunk_id": cid, "quote": s[:60], "role": "answer"} for cid, s in sentences],
        }
    if schema == "UnanswerableQuestion":  # what the passage's topic costs in Antarctica: no passage says (usually)
        first = _first_sentence(passages(user)[0][1])
        topic = sorted(words(first) - _FRAME, key=lambda w: (-len(w), w))[0]
        return {
            "question": f"What does {topic} cost in Antarctica?",
            "missing": "a price for Antarctica",
            "answer": f"The documents do not say what {topic} costs in Antarctica.",
        }
    if schema == "FalsePremiseQuestion":  # the first sentence holding a number, the number doubled
        text = passages(user)[0][1].strip().split("\n")[-1]
        sentences = re.split(r"(?<=[.!?])\s", text)
        numbered = [s for s in sentences if re.search(r"\b\d+\b", s)]
        sentence = numbered[0] if numbered else sentences[0]
        number = re.search(r"\b\d+\b", sentence)
        wrong = str(int(number.group()) * 2) if number else "7"
        premise = (sentence[: number.start()] + wrong + sentence[number.end() :]) if number else f"{wrong} {sentence}"
        topic = sorted(words(sentence) - _FRAME, key=lambda w: (-len(w), w))[0]
        return {
            "question": f"Why is the {topic} figure {wrong} now?",
            "premise": premise,
            "correction": sentence,
            "answer": f"It is not {wrong}: {sentence}",
        }
    if schema == "PremiseVerdict":  # contradicted: a passage with the claim's words and other numbers
        claim = block(user, "CLAIM")
        numbers = set(re.findall(r"\b\d+\b", claim))
        near = [t for _, t in passages(user) if len(words(claim) & words(t)) >= 0.6 * max(1, len(words(claim)))]
        other = [t for t in near if set(re.findall(r"\b\d+\b", t)) and not numbers <= set(re.findall(r"\b\d+\b", t))]
        stated = [t for t in near if numbers <= set(re.findall(r"\b\d+\b", t)) and words(claim) <= words(t)]
        return {"contradicted": bool(other), "supported": bool(stated), "reason": "compared the numbers"}
    if schema == "PremiseAnswerVerdict":  # corrected: the response says "not" and gives the reference's numbers
        ref, resp = block(user, "REFERENCE"), block(user, "RESPONSE")
        numbers = set(re.findall(r"\d+", ref))
        corrected = bool(re.search(r"\b(not|isn't|no longer)\b", resp, re.I)) and numbers <= set(
            re.findall(r"\d+", resp)
        )
        return {"response_fact": resp, "premise_corrected": corrected, "label": short_label(ref, resp)}
    if schema == "AbstentionVerdict":  # declined: says it does not know or that the sources do not say, no digits
        resp = block(user, "RESPONSE")
        said_no = re.search(r"\b(do not|don't|cannot|could not|couldn't) (know|say|tell|find|cover)", resp, re.I)
        answer = "" if said_no and not re.search(r"\d", resp) else resp
        return {"answer_given": answer, "declined": bool(said_no)}
    if schema == "SearchVerdict":  # answered when the passages hold every topic word; the closest sentence quoted
        question = words(block(user, "QUESTION")) - _FRAME
        given = [t.strip().split("\n")[-1] for _, t in passages(user)]
        if not question or not question <= words(" ".join(given)):
            return {"quote": "", "answerable": False, "reason": "no passage gives it"}
        sentences = [x for t in given for x in re.split(r"(?<=[.!?])\s", t)]
        return {
            "quote": max(sentences, key=lambda x: len(words(x) & question)),
            "answerable": True,
            "reason": "the passages say it",
        }
    if schema == "BlindAnswer":  # answers from the passages: their first sentences, or "cannot tell"
        given = passages(user)
        question = words(block(user, "QUESTION")) - _FRAME
        hits = [re.split(r"(?<=[.!?])\s", t.strip().split("\n")[-1])[0] for _, t in given]
        ok = bool(given) and question <= words(" ".join(t for _, t in given))  # every topic word is there
        return {"own_answer": " ".join(hits) if ok else "", "answerable": ok, "reason": "from the passages"}
    if schema == "Critique":  # a question naming no author or essay is fine
        vague = re.search(r"\bthe (author|essay|writer|article)\b", block(user, "QUESTION"), re.I)
        return {
            "self_contained": 1 if vague else 5,
            "clear": 4,
            "realistic": 4,
            "reason": "refers to an unnamed text" if vague else "a question a customer could ask",
        }
    if schema == "SameAnswer":  # the same when the second holds (nearly) every word of the first
        first, second = words(block(user, "FIRST ANSWER")), words(block(user, "SECOND ANSWER"))
        same = bool(first) and len(first & second) >= 0.9 * len(first)
        return {"same": same, "reason": "compared word by word"}
    if schema == "PingAnswer":
        marked = re.search(r"<<<WORD\n(.*?)\nWORD>>>", user, re.S)
        if marked:
            return {"ok": True, "echo": marked.group(1)}
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
    return {
        "id": reply_id,
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {
            "prompt_tokens": sum(tokens(m["content"]) + 3 for m in body["messages"]),
            "completion_tokens": tokens(content),
            "total_tokens": 0,
        },
    }


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
            out.append(
                {
                    "id": f"batch_req_{i}",
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {"code": "server_error", "message": why},
                }
            )
        else:
            out.append(
                {
                    "id": f"batch_req_{i}",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": 200, "request_id": f"req_{i}", "body": reply_to(line["body"])},
                    "error": None,
                }
            )
    Path(output).write_text("".join(json.dumps(x) + "\n" for x in out))
    return len(lines)


# ------------------------------------------------------------------------------------------ habits
# What real OpenAI-compatible servers do, each read from the server's own code:
# - llama-cpp-python (llama_cpp/server): the request model's response_format type is Literal["text",
#   "json_object"] with an optional "schema" (made into a grammar); a json_schema type fails pydantic's
#   validation inside the route, whose error handler answers every exception it does not know with
#   HTTP 500 {"error": {"message": str(exc), "type": "internal_server_error", ...}} (errors.py); a prompt
#   past n_ctx is a 400 "This model's maximum context length is N tokens. However, you requested M tokens
#   (P in the messages, C in the completion)...", code context_length_exceeded.
# - older vLLM (entrypoints/openai): the same Literal, refused by FastAPI's validation handler with 400
#   {"object": "error", "message": ..., "type": "BadRequestError", "code": 400}; extra keys of
#   response_format (a "schema") are ignored; a prompt plus max_tokens past max_model_len is a 400
#   "This model's maximum context length is N tokens. However, you requested M tokens (...)".
# - TGI (router): response_format is {"type": "json" | "regex", "value": ...}; anything else is axum's
#   422 text/plain "Failed to deserialize the JSON body into the target type: response_format: ...";
#   a prompt plus max_new_tokens past max_total_tokens is a 422 {"error": "Input validation error: `inputs`
#   tokens + `max_new_tokens` must be <= N. Given: ...", "error_type": "validation"} (validation.rs).
# - llama-server (tools/server): a prompt of n_ctx tokens or more is a 400 {"error": {"code": 400,
#   "message": "request (P tokens) exceeds the available context size (N tokens), try increasing it",
#   "type": "exceed_context_size_error", "n_prompt_tokens": P, "n_ctx": N}}.
# - Ollama (openai/openai.go): json_schema becomes its format, json_object is "json" (a "schema" key is
#   not read); a prompt longer than num_ctx (2,048 by default) is cut from the front without a word, and
#   usage.prompt_tokens is prompt_eval_count: the tokens it kept.
# - small models without a grammar wrap their JSON in prose or a fence, write lists or objects where
#   a sentence of reasoning is asked, and at temperature 0 give the same bytes when asked again.

HABITS = {
    "llama_cpp_python": "json_schema refused with HTTP 500 (pydantic: 'text' or 'json_object'); json_object with "
    "a 'schema' is a grammar; with a context, a longer request is a 400 naming it",
    "vllm_400": "json_schema refused with 400 BadRequestError (older vLLM); json_object taken, its 'schema' ignored",
    "tgi_422": "every response_format refused with 422 text/plain (TGI's own 'json'/'regex' grammar types): "
    "only instructions work; with a context, a longer request is a 422 '`inputs` tokens + "
    "`max_new_tokens` must be <= N'",
    "prose": "the JSON inside prose: in a fence after 'Here is my assessment:', or inline in a sentence",
    "loose_reasoning": "lists and objects where the schema asks for a string of reasoning",
    "no_usage": "no 'usage' in any reply",
    "ollama_cut": "a prompt longer than the context (num_ctx) cut from the front, answered from what is left, "
    "usage.prompt_tokens = the tokens kept",
    "context_400": "vLLM: prompt + max_tokens past the context is a 400 naming 'maximum context length'",
    "llama_server_400": "llama-server: a prompt of the context or more is a 400 'exceeds the available context "
    "size (N tokens)'",
    "repeat_invalid": "always the same unusable bytes (no JSON), asked again or not",
    "two_answers": "prose weighing two different answers, the same bytes when asked again",
    "loose_decisions": "a grade 2.5 or true, a label 'Correct', a score 4.5 on the first try; right when asked again",
}
# Ollama's /api/show for a model whose Modelfile sets no num_ctx (the common case): the server's default
# context applies, which the page does not say
OLLAMA_SHOW = {
    "modelfile": "FROM qwen2.5",
    "parameters": 'stop "<|im_end|>"',
    "template": "{{ .Prompt }}",
    "model_info": {"qwen2.context_length": 32768},
}
DEFAULT_CONTEXT = {"ollama_cut": 300, "context_400": 1024, "llama_server_400": 1024}
REPEATED = "I am sorry, I can only answer in plain words: the passage looks relevant to me."


def schema_seen(body: dict) -> str:
    """The name of the answer's schema as a model behind this request sees it: the json_schema's name,
    else the title of the schema in response_format's 'schema' (llama.cpp's grammar), else the title
    of the schema the instructions carry ('...follows this JSON schema:\\n{...}')."""
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name") if isinstance(fmt.get("json_schema"), dict) else None
    if name:
        return name
    if isinstance(fmt.get("schema"), dict) and fmt["schema"].get("title"):
        return fmt["schema"]["title"]
    for m in body["messages"]:
        text = m.get("content") or ""
        at = text.find("JSON schema:\n") if m.get("role") == "system" else -1
        if at >= 0:
            try:
                schema, _ = json.JSONDecoder().raw_decode(text, at + len("JSON schema:\n"))
            except ValueError:
                continue
            if isinstance(schema, dict) and schema.get("title"):
                return schema["title"]
    return ""


def prompt_of(messages: list[dict]) -> tuple[str, str]:
    """(system, user) of a conversation: every system message, and the user message before the first
    reply (a re-ask appends the reply and a user turn saying what was wrong)."""
    system = "\n".join(m["content"] for m in messages if m.get("role") == "system")
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    users = [m["content"] for m in messages[:first] if m.get("role") == "user"]
    return system, users[-1] if users else ""


def prompt_tokens(messages: list[dict]) -> int:
    return sum(tokens(m.get("content") or "") + 3 for m in messages)


def front_cut(messages: list[dict], keep: int) -> list[dict]:
    """The conversation as a server that keeps only its last ``keep`` tokens sees it (Ollama past num_ctx)."""
    drop = prompt_tokens(messages) - keep
    out = []
    for m in messages:
        n = tokens(m.get("content") or "") + 3
        if drop >= n:
            drop -= n
            continue
        if drop > 0:
            starts = [x.start() for x in re.finditer(r"\w+|[^\w\s]", m["content"])]
            cut = max(0, drop - 3)
            m = {**m, "content": m["content"][starts[cut] :] if cut < len(starts) else ""}
            drop = 0
        out.append(m)
    return out


def _reasons_loose(schema: str, a: dict) -> dict:
    """The same answer with its reasoning written as lists and objects (decisions untouched)."""
    a = json.loads(json.dumps(a))
    if schema == "RelevanceAnswer":
        a.update(
            intent=[a["intent"], "and what it is for"],
            match={"aspect 1": a["match"], "aspect 2": "not said"},
            trust={"source": a["trust"], "dated": False},
        )
    elif schema == "BatchAnswer":
        for j in a["judgments"]:
            j.update(intent=[j["intent"]], match={"overlap": j["match"]}, trust=[j["trust"], "no date"])
    elif schema == "AnswerVerdict":
        a.update(
            reference_facts=[a["reference_facts"], "one fact"],
            response_claims={"claim 1": a["response_claims"]},
            comparison={"share": a["comparison"], "verdict": a["label"]},
            unsupported_claims={} if not a["unsupported_claims"] else a["unsupported_claims"],
        )
    elif schema in ("BlindAnswer", "SameAnswer", "Critique"):
        a["reason"] = [a["reason"], {"checked": True}]
    return a


def _another(schema: str, a: dict) -> dict:
    """A different answer to the same prompt, as valid as the first (a reply weighing two)."""
    a = json.loads(json.dumps(a))
    if schema == "RelevanceAnswer":
        a["grade"] = (a["grade"] + 1) % 4
    elif schema == "BatchAnswer":
        for j in a["judgments"]:
            j["grade"] = (j["grade"] + 1) % 4
    elif schema == "AnswerVerdict":
        a["label"] = "partial" if a["label"] != "partial" else "correct"
    elif schema == "NuggetList":
        a["nuggets"] = a["nuggets"][:1] + ["another fact"]
    elif schema == "ImportanceAnswer":
        for x in a["labels"]:
            x["importance"] = "okay" if x["importance"] == "vital" else "vital"
    elif schema == "AssignmentAnswer":
        for x in a["assignments"]:
            x["support"], x["chunk_ids"] = "partial_support", x["chunk_ids"]
    elif schema == "GeneratedQuestion":
        a["question"] = a["question"].rstrip("?") + " today?"
    elif schema in ("BlindAnswer",):
        a["answerable"] = not a["answerable"]
    elif schema == "SameAnswer":
        a["same"] = not a["same"]
    elif schema == "Critique":
        a["clear"] = 5 if a["clear"] != 5 else 4
    elif schema == "PingAnswer":
        a["echo"] = a["echo"] + "s"
    return a


def _decisions_loose(schema: str, a: dict) -> dict:
    """The first try of a model that writes its decisions loosely: a grade 2.5 (or true for a 3), a
    label capitalised, a critic's score 4.5."""
    a = json.loads(json.dumps(a))

    def loose(g):
        return True if g == 3 else g + 0.5

    if schema == "RelevanceAnswer":
        a["grade"] = loose(a["grade"])
    elif schema == "BatchAnswer":
        for j in a["judgments"]:
            j["grade"] = loose(j["grade"])
    elif schema == "AnswerVerdict":
        a["label"] = a["label"].capitalize()
    elif schema == "Critique":
        a["clear"] = a["clear"] + 0.5
    return a


def _error(status: int, payload: Any, content_type: str = "application/json") -> tuple[int, bytes, str]:
    data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
    return status, data, content_type


def _refusal(habit: str, body: dict) -> tuple[int, bytes, str] | None:
    """The server's refusal of this request's response format or length, as that server words it;
    None when it takes the request."""
    fmt = body.get("response_format") or {}
    kind = fmt.get("type")
    pydantic = (
        "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be "
        f"'text' or 'json_object'\", 'input': '{kind}', 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}]"
    )
    if habit == "llama_cpp_python" and kind == "json_schema":
        return _error(
            500, {"error": {"message": pydantic, "type": "internal_server_error", "param": None, "code": None}}
        )
    if habit == "vllm_400" and kind == "json_schema":
        return _error(
            400, {"object": "error", "message": pydantic, "type": "BadRequestError", "param": None, "code": 400}
        )
    if habit == "tgi_422" and kind:
        column = len(json.dumps(body))
        return _error(
            422,
            "Failed to deserialize the JSON body into the target type: response_format: unknown "
            f"variant `{kind}`, expected `json` or `regex` at line 1 column {column}",
            "text/plain",
        )
    return None


def _overflow(habit: str, context: int | None, body: dict) -> tuple[int, bytes, str] | None:
    if context is None:
        return None
    n = prompt_tokens(body["messages"])
    m = body.get("max_tokens")
    asked = n + (m or 0)
    if habit in ("context_400", "llama_cpp_python") and (asked > context or n >= context):
        words = (
            f"This model's maximum context length is {context} tokens. However, you requested {asked} tokens "
            f"({n} in the messages, {m} in the completion). Please reduce the length of the messages or "
            "completion."
        )
        if habit == "context_400":
            return _error(
                400, {"object": "error", "message": words, "type": "BadRequestError", "param": None, "code": 400}
            )
        return _error(
            400,
            {
                "error": {
                    "message": words,
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
        )
    if habit == "tgi_422" and asked > context:  # router/src/validation.rs: MaxTotalTokens, a JSON 422
        words = (
            f"Input validation error: `inputs` tokens + `max_new_tokens` must be <= {context}. Given: {n} "
            f"`inputs` tokens and {m or 0} `max_new_tokens`"
        )
        return _error(422, {"error": words, "error_type": "validation"})
    if habit == "llama_server_400" and n >= context:
        words = f"request ({n} tokens) exceeds the available context size ({context} tokens), try increasing it"
        return _error(
            400,
            {
                "error": {
                    "code": 400,
                    "message": words,
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": n,
                    "n_ctx": context,
                }
            },
        )
    return None


def habit_reply(body: dict, habit: str, context: int | None = None, reply_id: str = "fake") -> tuple[int, bytes, str]:
    """(status, body, content type) of a server with ``habit`` (see ``HABITS``) answering one request."""
    refused = _refusal(habit, body) or _overflow(habit, context, body)
    if refused is not None:
        return refused
    messages = body["messages"]
    fmt = body.get("response_format") or {}
    if habit in ("vllm_400", "ollama_cut") and "schema" in fmt:  # json_object's "schema" is not read there
        body = {**body, "response_format": {k: v for k, v in fmt.items() if k != "schema"}}
    schema = schema_seen(body)
    seen = messages
    if habit == "ollama_cut" and context is not None:
        seen = front_cut(messages, context)
    system, user = prompt_of(seen)
    try:
        answer = answer_for(schema, user, system)
    except (ValueError, IndexError, KeyError):  # what is left of a cut prompt holds nothing to answer from
        full_system, full_user = prompt_of(messages)
        answer = answer_for(schema, full_user, full_system)
    asked_again = any(m.get("role") == "assistant" for m in messages)
    if habit == "prose":
        if len(user) % 2:
            content = f"Here is my assessment:\n```json\n{json.dumps(answer, indent=2)}\n```\nI hope this helps."
        else:
            content = f"Sure. Reading the passage closely, my answer is {json.dumps(answer)} and nothing more."
    elif habit == "loose_reasoning":
        content = json.dumps(_reasons_loose(schema, answer))
    elif habit == "repeat_invalid":
        content = REPEATED
    elif habit == "two_answers":
        content = (
            f"At first I would say {json.dumps(_another(schema, answer))}, but on reflection "
            f"{json.dumps(answer)} fits better."
        )
    elif habit == "loose_decisions" and not asked_again:
        content = json.dumps(_decisions_loose(schema, answer))
    else:
        content = json.dumps(answer)
    reply: dict[str, Any] = {
        "id": reply_id,
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {
            "prompt_tokens": min(prompt_tokens(messages), context or prompt_tokens(messages))
            if habit == "ollama_cut"
            else prompt_tokens(messages),
            "completion_tokens": tokens(content),
            "total_tokens": 0,
        },
    }
    if habit == "no_usage":
        del reply["usage"]
    return 200, json.dumps(reply).encode(), "application/json"


class FakeLLM:
    """Start with ``with FakeLLM() as s``; ``s.url`` is the base URL; ``delay`` slows each answer;
    ``refuse`` makes every answer a refusal; ``pace`` answers at a model's speed; ``props`` serves
    llama-server's /props (the context, one slot); ``habit`` (one of
    ``HABITS``) serves the answers the way
    that kind of server does, and ``context`` is its context in the fake's tokens (a default per
    habit in ``DEFAULT_CONTEXT``; given to llama_cpp_python, a longer request is refused)."""

    def __init__(
        self,
        delay: float = 0.0,
        refuse: str | None = None,
        port: int = 0,
        habit: str | None = None,
        context: int | None = None,
        pace: tuple[float, float, float] | None = None,
        props: bool = False,
    ):
        if habit is not None and habit not in HABITS:
            raise ValueError(f"no such habit {habit!r}: one of {', '.join(HABITS)}")
        self.delay = delay
        # (prompt tokens a second, answer tokens a second, seconds a call besides): each answer takes the
        # time a model of that speed takes, one call at a time, by the tokens its usage reports
        self.pace = pace
        self.props = props  # answer GET /props as llama-server does: one slot, the context as n_ctx
        self._pace_lock = threading.Lock()
        self.refuse = refuse  # when set: every answer is this refusal (a model that rejects everything)
        self.habit = habit
        self.context = context if context is not None else DEFAULT_CONTEXT.get(habit or "")
        self.statuses: list[int] = []  # the HTTP status of each request's answer (requests[i]'s is statuses[i])
        self.calls = 0
        self.requests: list[dict] = []
        self.in_flight = 0  # requests being answered now
        self.peak = 0  # the most requests it was answering at once
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                found = self.path == "/props" and server.props
                data = json.dumps(
                    {"total_slots": 1, "default_generation_settings": {"n_ctx": server.context}}
                    if found
                    else {"error": "not found"}
                ).encode()
                self.send_response(200 if found else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                if not self.path.endswith("/chat/completions"):  # another page (Ollama's /api/show): not a call
                    self.rfile.read(int(self.headers.get("content-length", 0)))
                    status, data = (
                        (200, json.dumps(OLLAMA_SHOW).encode())
                        if self.path == "/api/show" and server.habit == "ollama_cut"
                        else (404, b'{"error": "not found"}')
                    )
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                with server._lock:
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
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
                    index = len(server.statuses)
                    server.statuses.append(0)  # answered below
                if server.delay:
                    time.sleep(server.delay)
                if server.refuse is not None:
                    reply = {
                        "id": "refused",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": None, "refusal": server.refuse},
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                    status, data, content_type = 200, json.dumps(reply).encode(), "application/json"
                elif server.habit is not None:
                    status, data, content_type = habit_reply(body, server.habit, server.context, f"fake-{server.calls}")
                else:
                    status, data, content_type = (
                        200,
                        json.dumps(reply_to(body, f"fake-{server.calls}")).encode(),
                        "application/json",
                    )
                if server.pace is not None and status == 200:
                    usage = json.loads(data).get("usage") or {}
                    read, wrote, per_call = server.pace
                    with server._pace_lock:  # one call at a time, as a server of one slot
                        time.sleep(
                            per_call + usage.get("prompt_tokens", 0) / read + usage.get("completion_tokens", 0) / wrote
                        )
                with server._lock:
                    server.statuses[index] = status
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a killed run, a cancelled call): nothing to tell

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": SERVE_POLL}, daemon=True
        )

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


if __name__ == "__main__":  # run by hand or by a subprocess test: python tests/fake_llm.py [delay [habit]]
    import sys

    delay, habit = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0, sys.argv[2] if len(sys.argv) > 2 else None
    with FakeLLM(delay, habit=habit) as s:
        print(s.url, flush=True)
        while True:
            time.sleep(3600)

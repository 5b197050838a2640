"""What an endpoint's failure says: whether to try again, whether it refuses the response format or
names its context, and the words (the server's own, on one line) an error message carries."""

from __future__ import annotations

import asyncio
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .openai_calls import openai

# words of a refusal that is about the response format (any status: llama-cpp-python answers a
# json_schema response_format with HTTP 500, others 400, 422 or 501)
_FORMAT_WORDS = re.compile(
    r"response_format|response format|json_schema|json_object|json schema|grammar|structured"
    r"|\bschema\b|'text' or 'json_object'",
    re.I,
)
# a refusal for length, in each server's words: OpenAI, vLLM and llama-cpp-python ("maximum context length is N
# tokens"), llama-server ("exceeds the available context size (N tokens)"), SGLang ("longer than the model's
# context length (N tokens)"), LM Studio ("context length of only N tokens"), TGI ("`inputs` tokens +
# `max_new_tokens` must be <= N", "`inputs` must have less than N tokens"; TGI's "`max_new_tokens` must be <= N"
# alone is about the answer's budget, not the context, and is not one)
_CONTEXT_WORDS = re.compile(
    r"context length|context window|maximum context|too many tokens|prompt is too long"
    r"|exceeds the (?:model's )?(?:maximum|context|available context)|context size"
    r"|inputs`? tokens \+ `?max_new_tokens`? must be <="
    r"|inputs`? must have less than \d+ tokens",
    re.I,
)
FORMAT_REFUSAL_STATUSES = (400, 422, 500, 501)


def timed_out(e: BaseException | None) -> bool:
    """Whether a call failed for want of an answer in time, not for want of a connection. The
    aiohttp transport reports every aiohttp connection error (a refused port, a dropped connection)
    to openai as a connect *timeout*; the aiohttp error underneath tells which it was."""
    if not isinstance(e, openai.APITimeoutError):
        return False
    for cause in _causes(e):
        if type(cause).__module__.split(".")[0] == "aiohttp":
            return isinstance(cause, (TimeoutError, asyncio.TimeoutError))
    return True


def _causes(e: BaseException) -> list[BaseException]:
    out, cause = [e], e.__cause__ or e.__context__
    while cause is not None and len(out) < 10:
        out.append(cause)
        cause = cause.__cause__ or cause.__context__
    return out


def root_cause(e: BaseException) -> str:
    """The innermost error's words on one line ("Connect call failed ('127.0.0.1', 9)"), not the
    openai wrapper's ("Connection error.")."""
    text = str(e)
    for cause in _causes(e)[1:]:
        message = str(cause).strip()
        if message.startswith("<"):  # an object's repr (aiohttp's raw message), not words
            message = type(cause).__name__
        text = re.sub(r"^\d{3}, message:\s*", "", message) or text  # aiohttp's parser errors are not HTTP statuses
    return " ".join(text.split())[:300]


def never_connected(e: BaseException) -> bool:
    """Whether a connection error came before any connection (refused, no such host), rather than
    on one that then broke (closed mid-answer, a malformed reply). The aiohttp transport reports
    all of its connection errors to openai as connect timeouts: its own error underneath tells."""
    causes = _causes(e)
    aio = [c for c in causes if type(c).__module__.split(".")[0] == "aiohttp"]
    if aio:
        return any(type(c).__name__.startswith("ClientConnector") for c in aio)
    transport = [c for c in causes if type(c).__module__.split(".")[0] in ("httpx", "httpcore")]
    return not transport or any(type(c).__name__ in ("ConnectError", "ConnectTimeout") for c in transport)


def transient(e: BaseException) -> bool:
    if isinstance(e, (openai.APIConnectionError, openai.RateLimitError)):
        return True
    # 501 Not Implemented and 505 HTTP Version Not Supported say what the server cannot do: asking
    # again changes nothing
    return isinstance(e, openai.APIStatusError) and (
        e.status_code in (408, 409) or (e.status_code >= 500 and e.status_code not in (501, 505))
    )


_CONTEXT_LIMIT = re.compile(
    r"(?:maximum context length|context length|context window|n_ctx|num_ctx|context size"
    r"|max_new_tokens`? must be <=|inputs`? must have less than)"
    r"[^0-9]{0,40}?(\d[\d,]{2,})\s*(?:tokens)?",
    re.I,
)


def named_context(text: str) -> int | None:
    """The context size a server's refusal names ("maximum context length is 2048 tokens",
    "exceeds the available context size (n_ctx = 4096)"), when it names one."""
    if not _CONTEXT_WORDS.search(text) and "n_ctx" not in text and "context size" not in text.lower():
        return None
    m = _CONTEXT_LIMIT.search(text)
    return int(m.group(1).replace(",", "")) if m else None


def refuses_format(e: Any) -> bool:
    """Whether an error status refuses the response format (a 400, 422, 500 or 501 naming it), not
    the request for another reason such as its length."""
    if getattr(e, "status_code", None) not in FORMAT_REFUSAL_STATUSES:
        return False
    text = f"{e} {error_detail(e)}"
    return bool(_FORMAT_WORDS.search(text)) and not _CONTEXT_WORDS.search(text)


def retry_after(e: openai.APIStatusError) -> float | None:
    headers = getattr(e.response, "headers", None) or {}
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def error_detail(e: openai.APIStatusError) -> str:
    """The endpoint's own message, on one line: an API's error message, else the body's text, and
    for an HTML page (a web server, a proxy's error page) its title rather than the page."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")  # OpenAI's {"error": {"message"}}, vLLM's {"message"}, TGI's {"error": "..."}
        msg = (
            err.get("message")
            if isinstance(err, dict)
            else body.get("message") or (err if isinstance(err, str) else None)
        )
        if msg:
            return " ".join(str(msg).split())[:300]
    text = str(e)
    if re.search(r"<!doctype html|<html|<body", text, re.I):
        title = re.search(r"<title>(.*?)</title>", text, re.I | re.S)
        return (
            "an HTML page"
            + (f" ({' '.join(title.group(1).split())[:120]!r})" if title else "")
            + ", not the API's JSON: is the base URL the API's root (it usually ends in /v1)?"
        )
    return " ".join(text.split())[:300]


def v1_base_url(base_url: str | None) -> str | None:
    """The base URL an OpenAI-compatible server most likely serves the API under, for a ``base_url``
    whose requests found no such path (404/405): the URL cut after its /v1 part (a whole endpoint
    given as the base), else with /v1 appended. None when it ends in /v1 already or names another
    version (/v1beta, /v2): then the missing path is not the base URL's fault, as far as can be told."""
    if not base_url:
        return None  # the default, api.openai.com/v1
    parts = urlsplit(base_url)
    segments = [s for s in parts.path.split("/") if s]
    if segments and segments[-1] == "v1":
        return None
    if "v1" in segments:
        segments = segments[: segments.index("v1") + 1]
    elif any(re.fullmatch(r"v\d+\w*", s) for s in segments):
        return None
    else:
        segments.append("v1")
    return urlunsplit((parts.scheme, parts.netloc, "/" + "/".join(segments), parts.query, ""))

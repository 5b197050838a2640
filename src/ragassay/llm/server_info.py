"""What a server people run on their own machine says about itself: how many calls it serves at once
and how long a prompt it holds.

Asked once per run, before the first call, and only of servers on this machine or its network (a
hosted API is never asked): llama.cpp's ``GET /props`` (``total_slots``, ``n_ctx``), vLLM's
``GET /v1/models`` (``max_model_len``) and, when neither said the context, Ollama's ``POST /api/show``
(the ``num_ctx`` the model's parameters set; a read, though a POST). A server that has none of them
answers 404 and is used as before; an Ollama model without a ``num_ctx`` of its own runs at the
server's default, which this does not know: a prompt it cuts is caught by its own count (see
``LLM._read_all``). Nothing here decides a
record: the context only keeps a prompt that cannot fit from being sent, and the slots only set the
default number of calls in flight (a ``--concurrency`` given wins).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .config import tls_context

ASK_TIMEOUT = 3.0  # seconds for each question: a server that takes longer to say it is served as before


@dataclass
class ServerInfo:
    context: int | None = None  # tokens a prompt and its answer may take
    slots: int | None = None  # calls served at once
    said_by: str = ""  # which of the server's pages said it

    def known(self) -> bool:
        return self.context is not None or self.slots is not None


def asks(base_url: str | None) -> bool:
    """Whether the endpoint is a server on this machine or its network (a loopback, private or
    link-local address, ``localhost``, a ``.local`` name): the servers people run themselves. A
    hosted API is never asked."""
    if not base_url:
        return False  # api.openai.com
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith((".localhost", ".local")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def _root(base_url: str) -> str:
    """The server's root: the base URL without its trailing ``/v1``."""
    parts = urlsplit(base_url.rstrip("/"))
    path = re.sub(r"/v1$", "", parts.path)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_props(data: Any) -> ServerInfo:
    """llama.cpp's ``/props``: ``total_slots``, and ``n_ctx`` (per slot) under
    ``default_generation_settings`` or at the top."""
    if not isinstance(data, dict):
        return ServerInfo()
    settings = data.get("default_generation_settings")
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return ServerInfo(
        context=n_ctx or _positive(data.get("n_ctx")), slots=_positive(data.get("total_slots")), said_by="/props"
    )


def read_models(data: Any, model: str | None) -> ServerInfo:
    """vLLM's ``/v1/models``: the ``max_model_len`` of the model asked for."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return ServerInfo()
    for entry in data["data"]:
        if isinstance(entry, dict) and entry.get("id") == model:
            context = _positive(entry.get("max_model_len"))
            return ServerInfo(context=context, said_by="/v1/models" if context else "")
    return ServerInfo()


def read_show(data: Any) -> ServerInfo:
    """Ollama's ``/api/show``: the ``num_ctx`` the model's parameters set. Its model_info's
    ``context_length`` is what the model could take, not what the server gives it (num_ctx's
    default, which changed between releases), so it is not used."""
    if not isinstance(data, dict) or not isinstance(data.get("parameters"), str):
        return ServerInfo()
    m = re.search(r"^\s*num_ctx\s+(\d+)\s*$", data["parameters"], re.M)
    return ServerInfo(context=int(m.group(1)), said_by="/api/show") if m else ServerInfo()


async def discover(base_url: str, model: str | None, headers: dict[str, str] | None = None) -> ServerInfo:
    """Ask the server at ``base_url`` (see the module); an empty ServerInfo when it says nothing.
    All the questions together take at most ``ASK_TIMEOUT``: a server that does not answer one is
    not asked the next (a port that accepts and never answers costs the run 3 s, not 3 s a page)."""
    try:
        return await asyncio.wait_for(_discover(base_url, model, headers), ASK_TIMEOUT)
    except Exception:  # (asyncio.TimeoutError among them) whatever goes wrong, the server is used as before
        return ServerInfo()


async def _discover(base_url: str, model: str | None, headers: dict[str, str] | None) -> ServerInfo:
    import httpx

    root = _root(base_url)
    found = ServerInfo()
    async with httpx.AsyncClient(
        timeout=ASK_TIMEOUT, headers=headers or {}, follow_redirects=False, verify=tls_context()
    ) as client:
        for ask in (lambda: client.get(f"{root}/props"), lambda: client.get(f"{base_url.rstrip('/')}/models")):
            try:
                reply = await ask()
            except httpx.TimeoutException:
                return found  # no answer: asking the next page would only wait again
            except Exception:  # a refused or odd answer to a question: the next question
                continue
            if reply.status_code != 200:
                continue
            try:
                data = reply.json()
            except (json.JSONDecodeError, ValueError):
                continue
            path = reply.request.url.path
            info = read_props(data) if path.endswith("/props") else read_models(data, model)
            found = _merged(found, info)
            if found.context is not None and found.slots is not None:
                break
        if found.context is None and model:
            found = _merged(found, await _ask_show(client, root, model))
    return found


def _merged(first: ServerInfo, then: ServerInfo) -> ServerInfo:
    """What two pages said, the first's word first; ``said_by`` names each page that said something."""
    pages = [p for p in (first.said_by, then.said_by) if p]
    return ServerInfo(first.context or then.context, first.slots or then.slots, " and ".join(dict.fromkeys(pages)))


async def _ask_show(client: Any, root: str, model: str) -> ServerInfo:
    """Ollama's ``/api/show`` for ``model`` (the name as the OpenAI layer takes it)."""
    try:
        reply = await client.post(f"{root}/api/show", json={"model": model})
        return read_show(reply.json()) if reply.status_code == 200 else ServerInfo()
    except Exception:  # refused, or not JSON: nothing said
        return ServerInfo()

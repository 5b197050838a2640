"""The ``openai`` package, imported on first use, and the one request the client sends through it."""

from __future__ import annotations

from typing import Any


class DeferredOpenAI:
    """``openai``, imported on first use: the package takes most of a second to import, and a
    process that sends nothing (a dry run, a rerun of finished work, a rules-only check) never
    needs it."""

    def __getattr__(self, name: str) -> Any:
        import openai as module

        return getattr(module, name)


openai: Any = DeferredOpenAI()


async def create(client: Any, body: dict[str, Any], timeout: float | None = None) -> Any:
    """``client.chat.completions.create(**body)``, minus the openai client's walk over the request
    to transform its parameters (about half the client's CPU per call, measured in
    benchmarks/llm_throughput.py): a body built here is plain JSON already, so it is posted as is,
    through the client's own public ``post``, and parsed into the same ``ChatCompletion``. A client
    that is not an ``AsyncOpenAI`` (a test double) is called the ordinary way."""
    if isinstance(client, openai.AsyncOpenAI):
        from openai.types.chat import ChatCompletion

        options = {"timeout": timeout} if timeout is not None else {}
        return await client.post("/chat/completions", cast_to=ChatCompletion, body=body, options=options)
    return await client.chat.completions.create(**body)

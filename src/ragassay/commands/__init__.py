"""The subcommands, one module per area; each declares its arguments and a handler that returns
the text to print. Handlers only call the library and format its results."""

from __future__ import annotations

from typing import Any


def register_all(sub: Any) -> None:
    from . import llm_stages, metrics, product
    for register in (product.demo, metrics.evaluate, metrics.compare, metrics.agree, metrics.retrieve,
                     llm_stages.generate, llm_stages.remap, llm_stages.judge, llm_stages.check,
                     product.report, product.track, product.history, product.gate, llm_stages.ping):
        register(sub)

"""What a judge run is asked to do (:class:`JudgeOptions`), and those options fitted to a server's
context, so that a long chunk's windows leave room for the prompt around them and the answer."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal


@dataclass
class JudgeOptions:
    depth: int = 10
    samples: int = 1
    batch: int = 1  # 1 = pointwise (one call per pair)
    max_chunk_chars: int = 6000  # longer chunks: judged in windows of this size (or cut, with long_chunks="cut")
    long_chunks: Literal["windows", "cut"] = "windows"
    window_overlap: int = 300
    max_tokens: int = 600
    sample_temperature: float = 0.7
    seed: int = 0  # sample i sends seed + i, so votes can be reproduced
    tie: Literal["lower", "higher", "round-half-even"] = "lower"  # the median of an even number of votes
    quiet: bool = False
    shard: tuple[int, int] | None = None  # judge only the queries of this slice (i, n): see engine.in_shard
    # pointwise prompts with six worked examples in their fixed part, which then passes the 1,024
    # tokens a provider's prompt cache needs (benchmarks/judge_prompt_cost.py): cheaper on models
    # whose cached tokens cost a tenth, dearer where they cost half
    cache_friendly: bool = False
    # "auto" (short for a model whose name says it is small), "full", "short" or a prompt file's path:
    # see llm/prompt_files.py; every prompt but the full one is answered in the short schema
    prompt: str = "auto"


CHARS_PER_TOKEN_AT_LEAST = 3.0  # English runs near 4 characters a token; 3 leaves room for other text
MIN_WINDOW_CHARS = 400  # a context with less room than this for the passage: windows cannot help


def fit_to_context(options: JudgeOptions, context: int | None, fixed_tokens: int) -> JudgeOptions:
    """Options whose windows fit a server's context: the room left by the prompt's fixed part and
    the answer's budget, in characters (at ``CHARS_PER_TOKEN_AT_LEAST``, shared by a batch's
    passages), when that is less than ``max_chunk_chars``; the same object otherwise. A context too
    small even for a short window is left to the client, which sends no prompt that cannot fit."""
    if context is None or options.long_chunks != "windows":
        return options
    room = context - options.max_tokens - fixed_tokens
    chars = int(room * CHARS_PER_TOKEN_AT_LEAST) // max(1, options.batch)
    if chars >= options.max_chunk_chars or chars < MIN_WINDOW_CHARS:
        return options
    return dataclasses.replace(options, max_chunk_chars=chars, window_overlap=min(options.window_overlap, chars // 5))

"""A server that cuts every prompt to one length says so by its count: ``usage.prompt_tokens`` the
same for prompts hundreds of tokens apart is a ceiling, not a reading. Such prompts are cut (an
error of kind ``cut``, never an answer), in whatever order their sizes come, and the counts read
at a ceiling never calibrate the rule that detects cutting."""

from __future__ import annotations

import random

import httpx
import pytest
import respx
from pydantic import BaseModel, Field

from fake_llm import make_llm
from ragassay.llm import LLMError
from ragassay.llm.cut_prompts import ReadCounts
from ragassay.llm.reading import Decision, Explanation

URL = "http://srv.test/v1"


class Verdict(BaseModel):
    reasoning: Explanation
    grade: Decision = Field(ge=0, le=3)


def _reply(prompt_tokens: int) -> httpx.Response:
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
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": '{"reasoning": "r", "grade": 2}'},
                }
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5},
        },
    )


def _prompt(tokens: int, mark: str) -> list[dict[str, str]]:
    """A prompt of ``tokens`` estimated tokens (4 characters each), unlike any other by ``mark``."""
    return [{"role": "user", "content": (mark + " ") + "w" * (4 * tokens - len(mark) - 1)}]


async def _asked(sizes: list[int], reads) -> list[str]:
    """What each prompt came to: 'ok' or the cut error's text."""
    out = []
    respx.post(f"{URL}/chat/completions").mock(side_effect=lambda request: _reply(next(reads)))
    llm = make_llm(None, URL, "m")
    for i, size in enumerate(sizes):
        try:
            await llm.ask(_prompt(size, f"p{i}"), Verdict)
            out.append("ok")
        except LLMError as e:
            assert e.kind == "cut"
            out.append(str(e))
    return out


@respx.mock
async def test_prompts_growing_past_the_context_all_read_as_it_are_cut():
    """Ollama at num_ctx 2048: the first prompt just over it reads as 2048 and looks whole; every
    prompt a sixth larger read as the same 2048 is cut, though each is read at more than 0.6 of its
    size (the plain rule alone never fires before 3,413 tokens)."""
    sizes = [2100, 2300, 2500, 2700, 3000, 3400]
    got = await _asked(sizes, iter([2048] * len(sizes)))
    assert got[:2] == ["ok", "ok"]
    assert all(g.startswith("prompts of about 2,100 and ") and "were both read as 2,048" in g for g in got[2:]), got
    assert f"{sizes[-1]:,} tokens were both read" in got[-1]


@respx.mock
@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_a_constant_count_is_a_ceiling_in_any_order_of_sizes(seed):
    """Sizes 1,100 to 1,900 in a shuffled order, all read as 1,000: once two sizes far apart met one
    count, every prompt read short at it is cut; no prompt of 1,400 tokens or more gets an answer
    after the first such pair (each is read at under 0.72 of its size)."""
    sizes = [1100, 1150, 1200, 1400, 1500, 1600, 1700, 1800, 1900]
    random.Random(seed).shuffle(sizes)
    got = await _asked(sizes, iter([1000] * len(sizes)))
    first = next(i for i, g in enumerate(got) if g != "ok")
    assert first <= next(i for i, s in enumerate(sizes) if any(abs(s - t) > 0.15 * max(s, t) for t in sizes[:i]))
    assert [s for s, g in zip(sizes[first:], got[first:]) if g == "ok" and s >= 1400] == []


@respx.mock
async def test_prompts_near_in_size_or_read_whole_may_share_a_count():
    """A count shared by chance is not a ceiling: prompts of 900 and 1,075 tokens both read as 1,000
    (each over 0.85 of its size), and two prompts 5% apart read as one count."""
    assert await _asked([900, 1075, 1000, 1050], iter([1000, 1000, 980, 980])) == ["ok"] * 4


def test_counts_read_at_a_ceiling_never_calibrate_the_rule():
    """Five prompts 1,100 to 1,250 tokens read as 1,000 (a server cutting at 1,000) would make a
    usual share of 0.87; once a 1,600-token prompt read as 1,000 shows 1,000 is a ceiling, those
    reads leave the calibration, and only whole prompts (distinct counts) set it."""
    reads = ReadCounts()
    for size in (1100, 1150, 1200, 1250, 1120):
        assert reads.cut(1000, size) is None  # each alone could be a whole prompt
    assert reads.cut(1000, 1600) is not None and 1000 in reads.ceilings
    assert reads.usual() is None  # nothing left to calibrate from
    for size, read in ((500, 700), (520, 728), (540, 756), (560, 784), (580, 812)):  # a tokenizer at 1.4
        assert reads.cut(read, size) is None
    assert reads.usual() == pytest.approx(1.4)
    # the calibrated rule: a prompt read at 0.75 of its estimate is well under this server's usual share
    assert reads.cut(1500, 2000) == "the server read 1,500 of about 2,000 prompt tokens"


def test_a_count_a_prompt_was_plainly_cut_at_is_a_ceiling_from_then_on():
    reads = ReadCounts()
    assert reads.cut(700, 1500) is not None and 700 in reads.ceilings  # read under 0.6 of it
    assert reads.cut(700, 1000) is not None  # 0.7 of it, at the count the server stops at
    assert reads.cut(700, 720) is None  # a prompt that fits reads whole at that count

"""Calls in flight: the endpoint sees as many requests at once as ``concurrency`` allows, once the
first call has found the structured-output mode (until then one goes alone, so a refused format is
refused once). A regression here is invisible to every result and costs a run most of its speed:
128 calls queued behind the first answer went out one at a time."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, Field

from fake_llm import FakeLLM
from ragassay.llm import LLM, LLMConfig


class ShortRelevance(BaseModel):  # a schema the fake model answers (by its title): the grade alone
    reasoning: str
    grade: int = Field(ge=0, le=3)


def _ask_all(url: str, calls: int, concurrency: int) -> LLM:
    async def main() -> LLM:
        llm = LLM(LLMConfig(model="fake", base_url=url, api_key="k", use_cache=False, concurrency=concurrency))
        await asyncio.gather(
            *(
                llm.ask([{"role": "user", "content": f"QUERY: q{i}\nPASSAGE: p{i}"}], ShortRelevance)
                for i in range(calls)
            )
        )
        await llm.aclose()
        return llm

    return asyncio.run(main())


@pytest.mark.parametrize("concurrency", [4, 12])
def test_calls_queued_behind_the_first_answer_go_out_together(concurrency):
    # an endpoint on 127.0.0.1 that says nothing of its slots; each answer takes long enough (0.6 s) that
    # every call sent together is seen together even on a machine busy with other work (at 0.15 s, a
    # loaded 2-core machine saw 10 of 12 arrive before the first finished)
    with FakeLLM(delay=0.6) as server:
        llm = _ask_all(server.url, 3 * concurrency + 1, concurrency)
        peak, calls = server.peak, server.calls
    assert calls == 3 * concurrency + 1 and llm.usage.stage("default").ok == calls
    # the client holds exactly `concurrency`; the server may count one more for an instant (a handler
    # finishing its bookkeeping as the next request arrives), never fewer once the first has answered
    assert llm.max_in_flight == concurrency and concurrency <= peak <= concurrency + 1


def test_the_first_call_still_goes_alone():
    # the first call finds the mode the server takes; each answer takes 1.5 s so that the 8 sent together are
    # seen together even when four test workers share two cores (at 0.6 s, a fresh-clone CI run saw 7 of 8)
    with FakeLLM(delay=1.5, habit="vllm_400") as server:
        llm = _ask_all(server.url, 9, 8)
        refused = server.statuses.count(400)
    # 9 calls at 8 in flight: the first goes alone and is refused json_schema once, not once per call in flight;
    # the other 8 then go together in the mode it found
    assert refused == 1 and server.calls == 10 and 8 <= server.peak <= 9 and llm.max_in_flight == 8

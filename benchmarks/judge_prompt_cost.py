"""What judge's two pointwise layouts cost per 1,000 pairs, with and without the provider's prompt cache.

    python benchmarks/judge_prompt_cost.py                 # the bundled example, bm25 run, depth 10
    python benchmarks/judge_prompt_cost.py --concurrency 32

The requests are the ones `ragassay judge` builds for the bundled example (its own planner, in the
order the engine sends them), once with the default prompt and once with `--cache-friendly`. Tokens
are counted with tiktoken's encoding when it is installed with its files (`pip install
'ragassay[tokens]'`), else at 4 characters a token (the line "tokens:" says which). The prompt cache is
simulated by the rule OpenAI documents: a request reuses the longest prefix it shares with a request
that has already been answered, when that prefix is at least 1,024 tokens, in steps of 128 tokens.
"Already answered" is modelled as sent at least `--concurrency` requests earlier (the engine keeps
that many in flight). Cached tokens are priced at the published cached rate
(ragassay.llm.usage.CACHED_PRICES); output tokens are the same in both layouts (`--output-tokens`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ragassay.data.chunk_files import read_chunks
from ragassay.data.run_files import read_run
from ragassay.llm import LLMConfig
from ragassay.llm.client import schema_of
from ragassay.llm.usage import CACHED_PRICES, PRICES, PRICES_AS_OF, token_model
from ragassay.product.demo import example_dir
from ragassay.stages.judge import JudgeOptions, plan_judge
from ragassay.stages.queries import read_query_items

CACHE_MIN, CACHE_STEP = 1024, 128


@dataclass
class Layout:
    name: str
    pairs: int
    prompt_tokens: int  # every request's input tokens, summed
    cached_tokens: int  # of those, what the prompt cache would serve
    static_tokens: int  # the part every request shares (schema, system message)

    def cost_per_1000(self, model: str, output_tokens: int, cache: bool) -> float:
        price_in, price_out = PRICES[model]
        cached = self.cached_tokens if cache else 0
        usd = (
            (self.prompt_tokens - cached) * price_in
            + cached * CACHED_PRICES[model]
            + self.pairs * output_tokens * price_out
        ) / 1e6
        return usd * 1000 / self.pairs


def requests(cache_friendly: bool, depth: int) -> list[str]:
    """The text of each request, in the order the engine sends them: the schema, then each
    message's content (a prefix shared by two requests is shared by their texts)."""
    ex = example_dir()
    plan = plan_judge(
        read_query_items(ex / "queries.jsonl"),
        read_chunks(ex / "chunks.jsonl"),
        read_run(ex / "runs" / "bm25.txt"),
        [LLMConfig(model="gpt-4o-mini")],
        "/dev/null/unused.jsonl",
        options=JudgeOptions(depth=depth, cache_friendly=cache_friendly),
    )
    out = []
    for item in plan.relevance_items:
        for call in item.open():
            schema_text = schema_of(call.response_model)[3]
            out.append(schema_text + "".join(m["content"] for m in call.message_list))
        item.close()
    return out


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def measure(name: str, texts: list[str], concurrency: int) -> Layout:
    counter = token_model("gpt-4o-mini")
    tokens = counter.exact or (lambda text: max(1, round(len(text) / counter.chars_per_token)))
    total = cached = 0
    static = min(common_prefix(texts[0], t) for t in texts[1:]) if len(texts) > 1 else 0
    for i, text in enumerate(texts):
        total += tokens(text)
        answered = texts[: max(0, i - concurrency + 1)]  # sent at least `concurrency` requests earlier
        if not answered:
            continue
        shared = max(common_prefix(text, t) for t in answered[-64:] + answered[:1])
        shared_tokens = tokens(text[:shared])
        if shared_tokens >= CACHE_MIN:
            cached += shared_tokens - shared_tokens % CACHE_STEP
    return Layout(name, len(texts), total, cached, tokens(texts[0][:static]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=8, help="calls in flight (judge's default: 8)")
    ap.add_argument(
        "--output-tokens",
        type=int,
        default=120,
        help="tokens of an answer (intent, match, trust, grade), the same in both layouts (default 120)",
    )
    args = ap.parse_args()
    layouts = [
        measure(name, requests(friendly, args.depth), args.concurrency)
        for name, friendly in (("default", False), ("--cache-friendly", True))
    ]
    counter = token_model("gpt-4o-mini")
    print(
        f"judge, bundled example, bm25 run, depth {args.depth}, pointwise; concurrency {args.concurrency}; "
        f"{args.output_tokens} output tokens a pair"
    )
    print(f"tokens: {counter.method}; prices as of {PRICES_AS_OF}")
    for lay in layouts:
        print(
            f"  {lay.name:17s} {lay.prompt_tokens / lay.pairs:6.0f} input tokens a pair, fixed part "
            f"{lay.static_tokens} tokens, {lay.cached_tokens / lay.prompt_tokens:5.1%} of input cacheable"
        )
    print("USD per 1,000 pairs          default   default+cache   friendly   friendly+cache   best")
    for model in PRICES:
        row = [lay.cost_per_1000(model, args.output_tokens, cache) for lay in layouts for cache in (False, True)]
        best = "--cache-friendly" if row[3] < row[1] else "default"
        print(f"  {model:24s} {row[0]:9.4f} {row[1]:15.4f} {row[2]:10.4f} {row[3]:16.4f}   {best}")


if __name__ == "__main__":
    main()

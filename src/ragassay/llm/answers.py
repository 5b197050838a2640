"""Reading an answer: the text of a completion parsed into the response model, a refusal or a cut-off
answer told apart, the re-asks that show the model what was wrong, and the tokens each reply used.

A reply that does not parse, breaks the schema, refuses, or was cut off at the token limit gets at
most ``max_reasks`` re-asks; an answer read from a batch file is parsed exactly as a live one, with
no re-ask.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .batch import failure_of
from .errors import LLMError
from .reading import read_answer
from .state import LLMState
from .usage import prompt_estimate

T = TypeVar("T", bound=BaseModel)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def text_of(content: Any) -> str | None:
    """A message's content as text: a string as is, a list of parts (some servers send
    ``[{"type": "text", "text": ...}]``) joined; None for anything else. A lone surrogate (JSON can
    escape one, ``"\\ud800"``; it is no character and no UTF-8 file or SQLite row can hold it)
    becomes U+FFFD."""
    if content is None or isinstance(content, str):
        text = content or ""
    elif isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in content):
        text = "".join(p["text"] for p in content)
    else:
        return None
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def no_lone_surrogates(value: Any) -> Any:
    """Parsed JSON with every lone surrogate (an escaped ``"\\ud800"``) in its strings made U+FFFD:
    the answer's text goes into records and the cache, which must be valid UTF-8."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, list):
        return [no_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {no_lone_surrogates(k): no_lone_surrogates(v) for k, v in value.items()}
    return value


def cached_tokens(usage: Any, prompt_tokens: int) -> int:
    """Input tokens the provider served from its prompt cache (``prompt_tokens_details.cached_tokens``;
    0 when the endpoint does not say), never more than the prompt."""
    details = getattr(usage, "prompt_tokens_details", None)
    n = getattr(details, "cached_tokens", None) if details is not None else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return 0
    return min(n, prompt_tokens)


def reask_text(kind: str, problem: str) -> str:
    extra = " Keep it shorter so that it fits." if kind == "truncated" else ""
    return (
        f"Your previous reply could not be used: {problem}. Reply again with only a JSON object "
        f"that follows the required schema.{extra}"
    )


class AnswerReading(LLMState):
    """The part of :class:`~ragassay.llm.client.LLM` that turns replies into validated answers."""

    def _from_batch(self, line: dict, key: str, response_model: type[T], su: Any) -> T:
        """An answer read from a batch output line: parsed exactly as a live answer, then cached."""
        from openai.types.chat import ChatCompletion

        why = failure_of(line)
        if why is not None:
            su.failed += 1
            raise LLMError("batch", f"the batch returned no answer for this call ({why})")
        try:
            completion = ChatCompletion.model_validate(line["response"]["body"])
        except ValidationError as e:
            su.failed += 1
            raise LLMError("batch", f"the batch answer is not a chat completion ({e.errors()[0]['msg']})") from None
        usage = completion.usage
        tokens_in, tokens_out = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
        su.calls += 1
        su.prompt_tokens += tokens_in
        su.completion_tokens += tokens_out
        su.cached_tokens += cached_tokens(usage, tokens_in)
        su.batch_prompt_tokens += tokens_in  # priced at the Batch API's rate
        su.batch_completion_tokens += tokens_out
        if not completion.choices:
            su.failed += 1
            raise LLMError("invalid", "the batch answer has no choices")
        self.last_found = "whole"
        kind, problem, answer = self._parse(completion.choices[0], response_model)
        su.extracted += answer is not None and self.last_found != "whole"
        if answer is None:  # no re-ask in a batch: the record says why, a live rerun can ask again
            su.failed += 1
            raise LLMError(kind, f"the batch answer is unusable: {problem}")
        raw = text_of(getattr(completion.choices[0].message, "content", None)) or ""
        self._keep(key, answer, raw, tokens_in, tokens_out, None, response_model)
        su.ok += 1
        return answer

    # ------------------------------------------------------------------------ answer loop

    async def _ask_until_valid(self, messages, response_model, params, su):
        convo = list(messages)
        problem_kind, problem = "invalid", ""
        total_in = total_out = 0
        replies: list[str] = []  # every unusable reply's text: one that comes back byte for byte is not re-asked
        tries = 0
        for round_no in range(self.config.max_reasks + 1):
            if round_no:
                su.reasked += 1
            completion = await self._call(convo, response_model, params, su)
            usage = getattr(completion, "usage", None)
            if usage is None or getattr(usage, "prompt_tokens", None) is None:
                su.unmetered += 1
            tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
            tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
            su.prompt_tokens += tokens_in
            su.completion_tokens += tokens_out
            su.cached_tokens += cached_tokens(usage, tokens_in)
            total_in, total_out = total_in + tokens_in, total_out + tokens_out
            if not completion.choices:
                problem_kind, problem, content = "invalid", "the endpoint returned no choices", ""
            else:
                choice = completion.choices[0]
                content = text_of(getattr(getattr(choice, "message", None), "content", None)) or ""
                self.last_found = "whole"
                problem_kind, problem, answer = self._parse(choice, response_model)
                if answer is not None:
                    su.extracted += self.last_found != "whole"
                    return answer, content, total_in, total_out, round_no == 0
            tries = round_no + 1
            if content and content in replies:  # the same bytes again (temperature 0): a re-ask would too
                break
            replies.append(content)
            convo = convo + [
                {"role": "assistant", "content": content},
                {"role": "user", "content": reask_text(problem_kind, problem)},
            ]
        again = (
            " (the last reply repeated an earlier one byte for byte: not asked again)"
            if tries < self.config.max_reasks + 1
            else ""
        )
        raise LLMError(problem_kind, f"no usable answer after {tries} tries{again}: {problem}", attempts=tries)

    def _parse(self, choice: Any, response_model: type[T]) -> tuple[str, str, T | None]:
        message = getattr(choice, "message", None)
        if message is None:
            return "invalid", "the answer had no message", None
        refusal = getattr(message, "refusal", None)
        if refusal:
            return "refusal", f"the model refused: {str(refusal)[:300]}", None
        if choice.finish_reason == "length":
            return "truncated", "the answer was cut off at the token limit (finish_reason=length)", None
        content = text_of(message.content)
        if content is None:
            return "invalid", f"the answer's content is not text ({type(message.content).__name__})", None
        content = content.strip()
        if not content:
            return "invalid", "the answer was empty", None
        answer, how, problem = read_answer(content, response_model, clean=no_lone_surrogates)
        if answer is None:
            return "invalid", problem, None
        self.last_found = how  # read by the caller at once (no await between): counts answers found in prose
        return "invalid", "", answer

    # ---------------------------------------------------------------------- transport loop

    def _read_all(self, completion: Any, body: dict[str, Any]) -> None:
        """Never label from a prompt the server cut: a server that reports reading far fewer prompt
        tokens than were sent (Ollama keeps the end of a prompt longer than its num_ctx, and drops the
        instructions at its start) gave an answer to a prompt it did not see whole."""
        usage = getattr(completion, "usage", None)
        read = getattr(usage, "prompt_tokens", None)
        if not isinstance(read, int) or isinstance(read, bool) or read <= 0:
            return  # a server that counts nothing says nothing: no rule can decide
        why = self._reads.cut(read, prompt_estimate(body))  # see llm/cut_prompts.py
        if why is not None:
            raise LLMError(
                "cut",
                f"{why}: it cut the prompt (and with it the instructions at its start), so its "
                "answer is not used; raise the server's context, e.g. Ollama's num_ctx, or send shorter "
                "prompts",
            )

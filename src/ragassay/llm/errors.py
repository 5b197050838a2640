"""The errors a failed LLM call raises, one class per reason, matched by type.

A stage turns each into a ``status: error`` record whose ``error`` starts with the reason's name
(``auth: the endpoint refused the credentials ...``): that name is the error's ``kind``, one of
:class:`ErrorKind`'s values, and it is what records and files keep, so the names never change.
``except LLMError`` catches them all; ``except EndpointUnreachable`` one reason.

``LLMError("auth", message)`` still builds the class of that kind (an :class:`AuthRefused`), so code
written before the classes existed raises and matches the same errors.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..errors import RagassayError


class ErrorKind(str, Enum):
    """Why an answer could not be obtained: the word an error record starts with."""

    CONFIG = "config"
    AUTH = "auth"
    TRANSPORT = "transport"
    REQUEST = "request"
    INVALID = "invalid"
    REFUSAL = "refusal"
    TRUNCATED = "truncated"
    BATCH = "batch"
    CUT = "cut"
    CONTEXT = "context"
    BUDGET = "budget"
    INPUT = "input"
    INTERNAL = "internal"


class LLMError(RagassayError):
    """An answer that could not be obtained; ``kind`` (a plain string, an :class:`ErrorKind` value)
    says why and ``attempts`` how many requests were sent for it."""

    kind: str = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> LLMError:
        if cls is LLMError and args:  # LLMError(kind, message): the class of that kind
            cls = ERROR_CLASSES.get(str(args[0]), LLMError)
        return super().__new__(cls)

    def __init__(self, *args: Any, attempts: int = 0):
        """``LLMError(kind, message[, attempts])``, or a class of one kind with its message alone:
        ``AuthRefused("the endpoint refused the key")``."""
        if len(args) == 1 and type(self).kind:
            kind, message = type(self).kind, args[0]
        elif 2 <= len(args) <= 3:
            kind, message = args[0], args[1]
            attempts = args[2] if len(args) == 3 else attempts
        else:
            raise TypeError(f"{type(self).__name__}(kind, message[, attempts]) takes 2 or 3 arguments, got {len(args)}")
        self.kind = kind.value if isinstance(kind, ErrorKind) else str(kind)
        self.attempts = attempts
        super().__init__(message)

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self}"


class NoEndpoint(LLMError):
    """Nothing usable to call: no base URL and no key, or a setting the client cannot use."""

    kind = ErrorKind.CONFIG.value


class AuthRefused(LLMError):
    """The endpoint refused the credentials (HTTP 401 or 403)."""

    kind = ErrorKind.AUTH.value


class EndpointUnreachable(LLMError):
    """No answer came: refused connections, timeouts, 429s and 5xx until the attempts or the deadline ran out."""

    kind = ErrorKind.TRANSPORT.value


class RequestRejected(LLMError):
    """The endpoint rejected the request itself (HTTP 400, 404, 422): asking again would not help."""

    kind = ErrorKind.REQUEST.value


class InvalidAnswer(LLMError):
    """The answer broke the schema after every re-ask."""

    kind = ErrorKind.INVALID.value


class AnswerRefused(LLMError):
    """The model declined to answer."""

    kind = ErrorKind.REFUSAL.value


class AnswerTruncated(LLMError):
    """The answer stopped at its token budget before it was whole."""

    kind = ErrorKind.TRUNCATED.value


class BatchAnswerMissing(LLMError):
    """A batch engine returned an error line, or no answer, for this call."""

    kind = ErrorKind.BATCH.value


class PromptCut(LLMError):
    """The server read far fewer prompt tokens than were sent: it cut the prompt, so the answer is not a label."""

    kind = ErrorKind.CUT.value


class ContextExceeded(LLMError):
    """The prompt does not fit the context the server said it has."""

    kind = ErrorKind.CONTEXT.value


class BudgetReached(LLMError):
    """A spending ceiling (--max-calls, --max-cost) stopped the call before it was sent."""

    kind = ErrorKind.BUDGET.value


class InputTooLong(LLMError):
    """The item's own input cannot be sent as it is (an answer or context past its limit)."""

    kind = ErrorKind.INPUT.value


class InternalError(LLMError):
    """A state ragassay should never reach (a planned record missing); a rerun repairs it."""

    kind = ErrorKind.INTERNAL.value


ERROR_CLASSES: dict[str, type[LLMError]] = {
    c.kind: c
    for c in (
        NoEndpoint,
        AuthRefused,
        EndpointUnreachable,
        RequestRejected,
        InvalidAnswer,
        AnswerRefused,
        AnswerTruncated,
        BatchAnswerMissing,
        PromptCut,
        ContextExceeded,
        BudgetReached,
        InputTooLong,
        InternalError,
    )
}

# the first failures that stop a run when they look alike: a dead endpoint, a refused key or request, a server
# that cuts every prompt or cannot hold one (the endpoint, not the item, is the problem)
EARLY_FAILURES: tuple[type[LLMError], ...] = (
    EndpointUnreachable,
    AuthRefused,
    RequestRejected,
    PromptCut,
    ContextExceeded,
)


def error_kinds_table() -> str:
    """Every error kind as a Markdown table (kind, class, what it means), for the documentation:
    generated from the classes, so the page cannot fall behind them."""
    rows = ["| kind | class | what happened |", "|---|---|---|"]
    for kind in ErrorKind:
        cls = ERROR_CLASSES[kind.value]
        rows.append(f"| `{kind.value}` | `{cls.__name__}` | {(cls.__doc__ or '').strip()} |")
    return "\n".join(rows)

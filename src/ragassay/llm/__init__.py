"""The one place that talks to an LLM endpoint: client, retry policy, cache, usage, resume.

Stages (generate, judge, check) build messages and call :meth:`LLM.ask` with a pydantic model;
they never build their own client, cache or retry loop. README.md, "The LLM layer", says what users
rely on.
"""

from .cache import Cache
from .client import LLM
from .config import LLMConfig, make_client
from .errors import (
    AnswerRefused,
    AnswerTruncated,
    AuthRefused,
    BatchAnswerMissing,
    BudgetReached,
    ContextExceeded,
    EndpointUnreachable,
    ErrorKind,
    InputTooLong,
    InternalError,
    InvalidAnswer,
    LLMError,
    NoEndpoint,
    PromptCut,
    RequestRejected,
)
from .usage import Usage

__all__ = [
    "AnswerRefused",
    "AnswerTruncated",
    "AuthRefused",
    "BatchAnswerMissing",
    "BudgetReached",
    "Cache",
    "ContextExceeded",
    "EndpointUnreachable",
    "ErrorKind",
    "InputTooLong",
    "InternalError",
    "InvalidAnswer",
    "LLM",
    "LLMConfig",
    "LLMError",
    "NoEndpoint",
    "PromptCut",
    "RequestRejected",
    "Usage",
    "make_client",
]

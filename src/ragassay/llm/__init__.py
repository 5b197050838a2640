"""The one place that talks to an LLM endpoint: client, retry policy, cache, usage, resume.

Stages (generate, judge, check) build messages and call :meth:`LLM.ask` with a pydantic model;
they never build their own client, cache or retry loop. README.md, "The LLM layer", says what users
rely on.
"""

from .cache import Cache
from .client import LLM
from .config import LLMConfig, make_client
from .errors import LLMError
from .usage import Usage

__all__ = ["Cache", "LLM", "LLMConfig", "LLMError", "Usage", "make_client"]

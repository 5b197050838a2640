"""Where the endpoint, model and key come from, and the one factory that builds the client.

Order: explicit values (CLI flags) > ``RAGASSAY_MODEL`` > the openai client's own variables
(``OPENAI_API_KEY``, ``OPENAI_BASE_URL``). A local endpoint (vLLM, Ollama, llama.cpp) needs no real
key: a base URL alone is enough.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LLMError
from .usage import price_for

if TYPE_CHECKING:  # ssl is imported with httpx, when a client is built
    import ssl

LOCAL_PLACEHOLDER_KEY = "not-needed"  # sent to keyless local servers; they ignore it


def default_cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragassay" / "llm-cache.sqlite"


@dataclass
class LLMConfig:
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_attempts: int = 6  # transport attempts per call (first try included)
    deadline: float = 300.0  # seconds per call, across its retries
    max_reasks: int = 2  # re-asks after an invalid answer
    max_wait: float = 60.0  # cap on any single back-off or Retry-After wait
    cache_path: Path | None = None
    use_cache: bool = True
    price_in: float | None = None  # USD per million input tokens (overrides the price table)
    price_out: float | None = None
    temperature: float = 0.0
    max_calls: int | None = None  # spending ceilings: no request is sent past them (LLMError "budget")
    max_cost: float | None = None  # USD
    transport: str | None = None  # "aiohttp" or "httpx"; None: see transport_for
    # which of concurrency and timeout were set (a flag, the Python API): the others may follow what a
    # server on this machine says it can serve (llm/server_info.py)
    given: frozenset = frozenset()

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig:
        """Fill unset values from the environment; ``overrides`` (CLI flags) win when not None."""
        known = {f.name for f in fields(cls)}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        values = {k: v for k, v in overrides.items() if v is not None}
        values.setdefault("given", frozenset(k for k in ("concurrency", "timeout") if k in values))
        cfg = cls(**values)
        if cfg.model is None:
            cfg.model = os.environ.get("RAGASSAY_MODEL") or None
        if cfg.base_url is None:
            cfg.base_url = os.environ.get("OPENAI_BASE_URL") or None
        if cfg.api_key is None:
            cfg.api_key = os.environ.get("OPENAI_API_KEY") or None
        if cfg.use_cache and cfg.cache_path is None:
            cfg.cache_path = default_cache_path()
        return cfg

    def check(self, endpoint: bool = True) -> None:
        """Raise one clear message when there is nothing usable to call (``endpoint=False``: only
        the model is needed, for a run that exports batch requests and calls nothing)."""
        if endpoint and not self.api_key and not self.base_url:
            raise LLMError(
                "config",
                "no LLM endpoint configured: set OPENAI_API_KEY (for api.openai.com) "
                "or OPENAI_BASE_URL / --base-url (for a local or compatible server such as "
                "vLLM, Ollama or llama.cpp, which need no key)",
            )
        if self.base_url and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", self.base_url):
            raise LLMError(
                "config",
                f"the base URL {redact(self.base_url, self.secrets())!r} has no scheme: did you "
                f"mean http://{redact(self.base_url, self.secrets())}?",
            )
        if self.base_url and not re.match(r"^https?://", self.base_url, re.I):
            scheme = self.base_url.split("://", 1)[0]
            raise LLMError(
                "config",
                f"the base URL {redact(self.base_url, self.secrets())!r} is not http:// or "
                f"https:// ({scheme}:// cannot carry the API)",
            )
        if not self.model:
            raise LLMError("config", "no model given: pass --model or set RAGASSAY_MODEL")
        if self.concurrency < 1:
            raise LLMError("config", "concurrency must be at least 1")
        if self.max_cost is not None:
            if price_for(self.model, self.price_in, self.price_out) is None:
                raise LLMError(
                    "config",
                    f"--max-cost needs a price for model {self.model!r}: pass --price-in and "
                    "--price-out (USD per million tokens)",
                )

    def secrets(self) -> list[str]:
        """Strings that must never be written anywhere: the key, and credentials in the base URL."""
        out = [self.api_key] if self.api_key and self.api_key != LOCAL_PLACEHOLDER_KEY else []
        if self.base_url:
            m = re.match(r"^[a-z]+://([^/@]+)@", self.base_url)
            if m:
                out.append(m.group(1))
                out.extend(p for p in m.group(1).split(":") if len(p) >= 4)
        # a shorter "key" (a local server's "x") would blank out every digit
        return [s for s in out if s and len(s) >= 4]

    def public_base_url(self) -> str:
        return redact(self.base_url or "https://api.openai.com/v1", self.secrets())


def redact(text: str, secrets: list[str]) -> str:
    for s in sorted(secrets, key=len, reverse=True):
        text = text.replace(s, "***")
    return re.sub(r"(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]{8,}", r"\1***", text)


TRANSPORTS = ("aiohttp", "httpx")


def transport_for(config: LLMConfig) -> str:
    """Which HTTP transport the client uses: ``config.transport``, else ``$RAGASSAY_HTTP``, else
    aiohttp when it is installed (``openai[aiohttp]``, a default dependency), else httpx.

    httpx's connection pool costs CPU that grows with the number of open connections; past about
    32 concurrent calls it, not the endpoint, sets the pace (benchmarks/llm_throughput.py). aiohttp
    does not. httpx stays for respx (which intercepts httpx only) and where aiohttp is missing."""
    choice = (config.transport or os.environ.get("RAGASSAY_HTTP") or "").strip().lower()
    if choice and choice not in TRANSPORTS:
        raise LLMError(
            "config", f"unknown HTTP transport {choice!r} (RAGASSAY_HTTP): use one of {', '.join(TRANSPORTS)}"
        )
    if choice == "httpx":
        return "httpx"
    try:
        import aiohttp  # noqa: F401
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        if choice == "aiohttp":
            raise LLMError("config", "the aiohttp transport needs aiohttp: pip install 'openai[aiohttp]'") from None
        return "httpx"
    return "aiohttp"


def make_client(config: LLMConfig, http_client: Any = None):
    """The one place an ``AsyncOpenAI`` client is built. Its own retries are off: ours decide. Its
    connection pool holds as many connections as calls may be in flight (``concurrency``)."""
    from openai import AsyncOpenAI

    config.check()
    import httpx

    # connecting gets at most 10 s (a host that does not answer at all is reported quickly); reading
    # the answer gets the whole --timeout (a model may think for a while)
    timeout = httpx.Timeout(config.timeout, connect=min(10.0, config.timeout))
    if http_client is None:
        import openai

        limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=config.concurrency)
        factory = openai.DefaultAioHttpClient if transport_for(config) == "aiohttp" else openai.DefaultAsyncHttpxClient
        http_client = factory(timeout=timeout, limits=limits, verify=tls_context())
    return AsyncOpenAI(
        api_key=config.api_key or LOCAL_PLACEHOLDER_KEY,
        base_url=config.base_url,
        timeout=timeout,
        max_retries=0,
        http_client=http_client,
    )


def tls_context() -> ssl.SSLContext:
    """The certificates every client of this process verifies servers with: httpx's default context
    (its CA bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set), built once. Loading the bundle
    takes ~40 ms of CPU, and a run builds a client for each event loop and one to ask a server what it
    is; a context is safe to share between connections and threads."""
    return _tls_context((os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")))


@functools.cache
def _tls_context(where: tuple[str | None, str | None]) -> ssl.SSLContext:
    """One context for each place the certificates come from: ``where`` is the two variables, only the
    cache's key, since httpx reads them itself when it builds the context."""
    del where
    import httpx

    return httpx.create_ssl_context()

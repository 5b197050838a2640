"""The one error a failed LLM call raises; stages turn it into a ``status: error`` record."""

from __future__ import annotations

from ..errors import RagassayError


class LLMError(RagassayError):
    """An answer that could not be obtained. ``kind`` says why:

    ``config`` (nothing to call), ``auth`` (key refused), ``transport`` (429/5xx/timeouts until
    the attempt limit or deadline), ``request`` (the endpoint rejected the request: 400/404/422),
    ``invalid`` (the answer broke the schema after every re-ask), ``refusal``, ``truncated``,
    ``batch`` (a batch engine returned an error line, or no answer, for this call), ``cut`` (the
    server read far fewer prompt tokens than were sent: it cut the prompt), ``context`` (the prompt
    does not fit the context the server said it has).
    """

    def __init__(self, kind: str, message: str, attempts: int = 0):
        self.kind = kind
        self.attempts = attempts
        super().__init__(message)

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self}"

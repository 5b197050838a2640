"""Prompts shipped with the package (``src/ragassay/prompts/``, also at ``prompts/`` in the repo).

Each prompt is a plain text file with ``{{placeholders}}``. Its version is a hash of its text, so
every output record can say which prompt made it (``judge_relevance@3f2a9c1b``), and editing a
prompt changes the version.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    @property
    def version(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:8]

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        missing = self.placeholders - set(values)
        extra = set(values) - self.placeholders
        if missing or extra:
            raise ValueError(f"prompt {self.name}: missing {sorted(missing)}, unexpected {sorted(extra)}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)


    def messages(self, **values: str) -> list[dict[str, str]]:
        """Render a prompt written as ``[system]`` and ``[user]`` sections into chat messages."""
        text = self.render(**values)
        parts = re.split(r"^\[(system|user)\]\n", text, flags=re.M)
        out = [{"role": role, "content": body.strip()} for role, body in zip(parts[1::2], parts[2::2])]
        if not out:
            out = [{"role": "user", "content": text.strip()}]
        return out


def delimit(label: str, text: str) -> str:
    """Wrap untrusted text in markers it cannot close itself (marker characters inside are defused)."""
    safe = text.replace("<<<", "< < <").replace(">>>", "> > >")
    return f"<<<{label}\n{safe}\n{label.split()[0]}>>>"


@lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    try:
        text = resources.files("ragassay").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"no prompt named {name!r} in ragassay/prompts") from None
    return Prompt(name, text)

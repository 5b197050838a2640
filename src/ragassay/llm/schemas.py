"""The JSON schema a response model is asked for, and the cache key of a call.

Both are pure and need no client, so a plan and a dry run compute the very keys a run will use.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from .cache import cache_key, endpoint_id


@lru_cache(maxsize=256)
def schema_of(response_model: type[BaseModel]) -> tuple[str, dict, bool, str]:
    """(name, closed JSON schema, strict?, schema text) of a response model, built once per class."""
    schema, strict = strict_schema(response_model.model_json_schema())
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", response_model.__name__)[:64]
    return name, schema, strict, json.dumps(schema, ensure_ascii=False)


def request_key(
    model: str,
    messages: list[dict[str, str]],
    response_model: type[BaseModel],
    params: dict[str, Any],
    base_url: str | None = None,
) -> str:
    """The cache key of one call, for the endpoint at ``base_url``; needs no client, so plans and
    dry runs compute it offline."""
    return cache_key(model, messages, None, params, endpoint_id(base_url), schema_json=_schema_json(response_model))


@lru_cache(maxsize=256)
def _schema_json(response_model: type[BaseModel]) -> str:
    """The schema as the cache key spells it (canonical JSON), once per class."""
    return json.dumps(schema_of(response_model)[1], sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def strict_schema(schema: dict) -> tuple[dict, bool]:
    """Close every object (``additionalProperties: false``); strict mode only when every property
    is required, as OpenAI's strict structured outputs demand."""
    strict = True

    def visit(node: Any) -> Any:
        nonlocal strict
        if isinstance(node, dict):
            node = {k: visit(v) for k, v in node.items()}
            if node.get("type") == "object" and "properties" in node:
                node.setdefault("additionalProperties", False)
                if set(node.get("required", [])) != set(node["properties"]):
                    strict = False
            if "default" in node:
                strict = False
            return node
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node

    return visit(schema), strict

"""LlamaIndex and LangChain retrievers as ragassay retrievers, and the chunk id of what they return.

A retriever is taken as it comes, without importing either library (each is spotted by the methods it
has, as the libraries' own code calls them):

- LlamaIndex (``llama_index.core`` BaseRetriever, or anything with ``.retrieve(query_str)``): returns
  ``NodeWithScore`` objects, ``.node`` the node and ``.score`` a float or None;
- LangChain (``langchain_core`` BaseRetriever or any Runnable with ``.invoke(query)``): returns
  ``Document`` objects (``.id``, ``.metadata``, ``.page_content``) with no score;
- a function of the query text (ragassay's own way): ids, ``(id, score)`` pairs, or the objects above
  (``(Document, score)`` pairs as a vector store's ``similarity_search_with_score`` gives them);
- a factory: a class, or a callable taking no positional argument, called once to make one of these.

Where the chunk id is (:class:`IdField`): ``id`` (the default: LlamaIndex's ``node.node_id``,
LangChain's ``Document.id``), ``ref_doc_id`` (LlamaIndex: the document the node was cut from) or
``metadata.KEY`` (either library: a key of the node's or document's metadata). A result that has no
id there is refused, naming the query, the rank and the metadata keys it does have.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import RagassayError, UsageError

Search = Callable[[str], Iterable[Any]]

ID_FIELDS = "id, ref_doc_id or metadata.KEY"


@dataclass(frozen=True)
class Adapted:
    """A retriever made into a function of the query text: ``kind`` says what it was
    ("function", "llamaindex", "langchain"), ``name`` the run's default tag."""

    search: Search
    kind: str
    name: str


def adapt(retriever: Any, name: str | None = None) -> Adapted:
    """The retriever as a search function. A factory (a class, or a callable that takes no
    positional argument) is called once first; what it makes must be a retriever itself."""
    made = _made(retriever)
    label = name or _name(retriever)
    if _has_method(made, "retrieve"):
        return Adapted(made.retrieve, "llamaindex", label)
    if _has_method(made, "invoke"):
        return Adapted(made.invoke, "langchain", label)
    if callable(made) and not isinstance(made, type):
        return Adapted(made, "function", label)
    raise RagassayError(
        f"the retriever {label!r} ({type(made).__name__}) is none of: a function of the query "
        "text, a LlamaIndex retriever (.retrieve), a LangChain retriever (.invoke), or a factory "
        "making one"
    )


def _made(retriever: Any) -> Any:
    if not _is_factory(retriever):
        return retriever
    try:
        made = retriever()
    except Exception as e:  # the user's code failed: say which, keep the cause
        raise RagassayError(f"the retriever factory {_name(retriever)!r} failed: {type(e).__name__}: {e}") from e
    if _is_factory(made):
        raise RagassayError(
            f"the retriever factory {_name(retriever)!r} made another factory ({type(made).__name__}), not a retriever"
        )
    return made


def _is_factory(obj: Any) -> bool:
    if isinstance(obj, type):
        return True
    if _has_method(obj, "retrieve") or _has_method(obj, "invoke") or not callable(obj):
        return False
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: taken as a search function
        return False
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    )
    return not any(p.kind in positional for p in params)


def _has_method(obj: Any, method: str) -> bool:
    return not isinstance(obj, type) and callable(getattr(obj, method, None))


def _name(obj: Any) -> str:
    return getattr(obj, "__name__", None) or type(obj).__name__


@dataclass(frozen=True)
class IdField:
    """Where a returned node or document holds the chunk id: ``id``, ``ref_doc_id`` or ``metadata.KEY``."""

    spec: str = "id"

    @classmethod
    def parse(cls, spec: str | None) -> IdField:
        """``None`` is the default ``id``; anything but the three forms is a :class:`UsageError`."""
        if spec is None:
            return cls()
        if spec in ("id", "ref_doc_id") or (spec.startswith("metadata.") and len(spec) > len("metadata.")):
            return cls(spec)
        raise UsageError(
            f"the id field (retrieve --id-field, id_field= in Python) must be {ID_FIELDS} "
            f"(e.g. metadata.chunk_id), got {spec!r}"
        )

    @property
    def key(self) -> str | None:
        """The metadata key, for ``metadata.KEY``."""
        return self.spec.removeprefix("metadata.") if self.spec.startswith("metadata.") else None


@dataclass(frozen=True)
class Found:
    """One result read: its chunk id, its score (None: the retriever gave none) and whether it came
    as a node or document (a node's id may repeat: several nodes cut from one chunk)."""

    chunk_id: str
    score: Any
    from_object: bool


def read_result(item: Any, field: IdField, qid: str, rank: int) -> Found:
    """A result as (chunk id, score): an id, an ``(id or object, score)`` pair, a LlamaIndex
    ``NodeWithScore`` or node, a LangChain ``Document``. ``rank`` counts from 1, for messages."""
    if _plain_id(item):
        return Found(str(item), None, False)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        thing, score = item
        if _plain_id(thing):
            return Found(str(thing), score, False)
        if _node_or_document(thing):
            return Found(object_id(thing, field, qid, rank), score, True)
    if _node_or_document(item):
        node = getattr(item, "node", None)
        if node is not None:  # LlamaIndex's NodeWithScore
            return Found(object_id(node, field, qid, rank), getattr(item, "score", None), True)
        return Found(object_id(item, field, qid, rank), None, True)
    raise RagassayError(
        f"retriever results must be ids or (id, score) pairs, LlamaIndex nodes or LangChain "
        f"documents; got {item!r} for query {qid!r}"
    )


def _plain_id(x: Any) -> bool:
    return isinstance(x, (str, int)) and not isinstance(x, bool)


def _node_or_document(x: Any) -> bool:
    return (
        getattr(x, "node", None) is not None
        or hasattr(x, "page_content")
        or (hasattr(x, "node_id") and hasattr(x, "metadata"))
    )


def object_id(obj: Any, field: IdField, qid: str, rank: int) -> str:
    """The chunk id a LlamaIndex node or LangChain document holds where ``field`` says; a
    :class:`RagassayError` naming the query, the rank and the metadata keys when it holds none."""
    langchain = hasattr(obj, "page_content")
    what = "LangChain Document" if langchain else "LlamaIndex node"
    metadata = getattr(obj, "metadata", None)
    if field.key is not None:
        value = metadata.get(field.key) if isinstance(metadata, dict) else None
        where = f"metadata[{field.key!r}]"
    elif field.spec == "ref_doc_id":
        if langchain:
            raise RagassayError(
                f"the id field ref_doc_id is LlamaIndex's; the retriever returned a {what} for "
                f"query {qid!r}: name a key of its metadata with retrieve --id-field metadata.KEY "
                f"({_keys(metadata)})"
            )
        value, where = getattr(obj, "ref_doc_id", None), "ref_doc_id"
    else:
        value = getattr(obj, "id", None) if langchain else getattr(obj, "node_id", getattr(obj, "id_", None))
        where = "Document.id" if langchain else "node_id"
    if _plain_id(value) and str(value) != "":
        return str(value)
    shown = "has none" if value is None or value == "" else f"holds {value!r}, not an id"
    raise RagassayError(
        f"the {what} at rank {rank} for query {qid!r} has no chunk id: its {where} {shown}; name "
        f"where your chunk ids are with retrieve --id-field, id_field= in Python ({ID_FIELDS}; "
        f"{_keys(metadata)})"
    )


def _keys(metadata: Any) -> str:
    if not isinstance(metadata, dict) or not metadata:
        return "its metadata is empty"
    keys = sorted(map(str, metadata))
    return "its metadata has " + ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")

"""Loading a retriever the user names as ``package.module:NAME`` or ``path/to/file.py:NAME``.

This is kept apart from running a retriever (:mod:`ragassay.stages.retrieve`) because it is about
Python's import machinery, not retrieval: it imports the user's module (a file by its path, with its
folder on ``sys.path`` while it loads) and says which name or file was not found, with the close ones.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError, RagassayError
from .retriever_results import near_files, near_names


def load_retriever(spec: str) -> Any:
    """Load ``package.module:NAME`` or ``path/to/file.py:NAME``: a function of the query text, a
    LlamaIndex or LangChain retriever object, or a factory making one (:func:`retriever_objects.adapt`
    tells them apart when the run starts)."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise InputError(f"retriever must look like 'package.module:function' or 'file.py:function', got {spec!r}")
    try:
        if module_part.endswith(".py"):
            path = Path(module_part)
            if not path.exists():
                raise InputError(f"no such file {module_part!r} (of the retriever {spec!r}){near_files(path)}")
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            assert mod_spec is not None and mod_spec.loader is not None  # (a .py path always has both)
            module = importlib.util.module_from_spec(mod_spec)
            sys.path.insert(0, str(path.resolve().parent))
            try:
                mod_spec.loader.exec_module(module)
            finally:
                sys.path.pop(0)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(module_part)
    except InputError:
        raise
    except Exception as e:
        raise RagassayError(f"could not import {module_part!r}: {type(e).__name__}: {e}") from e
    if not hasattr(module, attr):
        raise InputError(f"{module_part!r} has nothing named {attr!r}{near_names(module, attr)}")
    return getattr(module, attr)

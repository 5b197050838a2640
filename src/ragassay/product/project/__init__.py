"""The project file (``ragassay.toml``): what ``ragassay init`` finds in a folder, and what ``ragassay run``
reads.

``init`` looks at every file of a folder and names its role: chunks, queries, answers, people's answer
labels, qrels (with who labelled them, from ``FILE.origin.json``), runs (TREC or JSON Lines), retriever
functions (a ``.py`` file's public functions of one required argument, the query) and BEIR folders. It
guesses nothing silently: a file that could fill a role another file fills too is written commented out,
with the choices, and said; a file it cannot place is said. ``init --update`` appends the files that
appeared since, at the end of their table, and leaves every line already written as it is (a file named
anywhere in the file, commented out or not, is known).

The file is TOML, read with :mod:`tomllib` (Python 3.11+; on 3.10 the ``tomli`` package) and written by
hand, with comments.

The package: ``model`` (the project as read), ``toml_file`` (TOML and the line of a key),
``sections`` (one pydantic model per table: each key's type, range, default and the words its error
says), ``model_errors`` (pydantic's error said as ``ragassay.toml:LINE: key: why``), ``reading``
(``read_project``: the file validated by the models, then the checks across tables), ``finding`` (what
``init`` finds in a folder) and ``writing`` (the text ``init`` writes or appends). This module only
names what callers outside use.
"""

from .finding import Findings, Found, scan
from .model import DEFAULT_METRICS, DEFAULT_OUT, PROJECT_FILE, SINGLE_ROLES, STATE_DIR, Project
from .reading import LLM_KEYS, find_project, read_project
from .toml_file import load_toml, loads_toml
from .writing import InitResult, init_project, may_be_queries, render_project, update_text

__all__ = [
    "DEFAULT_METRICS",
    "DEFAULT_OUT",
    "LLM_KEYS",
    "PROJECT_FILE",
    "SINGLE_ROLES",
    "STATE_DIR",
    "Found",
    "Findings",
    "InitResult",
    "Project",
    "find_project",
    "init_project",
    "load_toml",
    "loads_toml",
    "may_be_queries",
    "read_project",
    "render_project",
    "scan",
    "update_text",
]

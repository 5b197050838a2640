"""A corpus of real text nobody on this project wrote, built at test time: the docstrings of the
Python standard library that runs the tests (chunks), their first lines as queries, and three
retrievers of our own (word overlap, name match, and one that ranks by text length). Nothing of it
is shipped: each test writes it into its own folder.

The texts differ a little between Python versions, so tests built on it assert relations (a score
against pytrec_eval's on the same files, a flag present or absent), never a fixed number.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path

MODULES = (
    "json",
    "csv",
    "textwrap",
    "string",
    "shutil",
    "heapq",
    "bisect",
    "statistics",
    "functools",
    "itertools",
    "collections",
    "pathlib",
    "datetime",
    "fractions",
    "difflib",
    "base64",
    "calendar",
    "fnmatch",
    "glob",
    "html",
    "ipaddress",
    "random",
    "secrets",
    "tempfile",
    "zipfile",
    "gzip",
    "urllib.parse",
    "uuid",
    "locale",
    "operator",
    "os",
    "math",
    "logging",
    "argparse",
    "subprocess",
    "threading",
    "copy",
    "pprint",
    "struct",
    "sqlite3",
    "email.utils",
    "decimal",
    "time",
)
WORD = re.compile(r"[a-z0-9]{3,}")


def docstring_chunks(limit: int = 300) -> list[dict]:
    """Chunks ``{"id", "doc_id", "title", "text"}``: one per documented public function or class
    (docstrings of 80 characters or more), module by module, in a stable order."""
    out: list[dict] = []
    seen: set[str] = set()
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in sorted(dir(module)):
            if attr.startswith("_"):
                continue
            obj = getattr(module, attr, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
                continue
            doc = inspect.getdoc(obj) or ""
            text = " ".join(doc.split())
            if len(text) < 80 or text in seen:
                continue
            seen.add(text)
            out.append({"id": f"{name}.{attr}", "doc_id": name, "title": attr, "text": text[:1200]})
            if len(out) >= limit:
                return out
    return out


def first_line_queries(chunks: list[dict], every: int = 7, limit: int = 40) -> list[dict]:
    """Queries ``{"id", "text"}``: the first sentence of every ``every``-th chunk's docstring,
    without the function's name (the words a user would type)."""
    out = []
    for c in chunks[::every]:
        sentence = re.split(r"(?<=[.!?])\s", c["text"], maxsplit=1)[0]
        sentence = re.sub(re.escape(c["title"]), "", sentence, flags=re.I).strip(" .")
        sentence = " ".join(sentence.split()[:14])
        if len(sentence) >= 20:
            out.append({"id": f"q{len(out):03d}", "text": sentence})
        if len(out) >= limit:
            break
    return out


RETRIEVERS = '''
import json, math, re
from pathlib import Path
WORD = re.compile(r"[a-z0-9]{3,}")
CHUNKS = [json.loads(line) for line in (Path(__file__).parent / "chunks.jsonl").read_text().splitlines()]
DF = {}
for c in CHUNKS:
    for w in set(WORD.findall(c["text"].lower())):
        DF[w] = DF.get(w, 0) + 1

def overlap(query):
    """Chunks ranked by the idf of the words they share with the query."""
    q = set(WORD.findall(query.lower()))
    scored = [(sum(math.log(len(CHUNKS) / DF[w]) for w in q & set(WORD.findall(c["text"].lower()))), c["id"])
              for c in CHUNKS]
    return [(i, s) for s, i in sorted(scored, reverse=True)[:10] if s > 0]

def names(query):
    """Chunks whose name or module shares a word with the query, shortest text first."""
    q = set(WORD.findall(query.lower()))
    hits = [c for c in CHUNKS if q & set(WORD.findall((c["title"] + " " + c["doc_id"]).lower().replace("_", " ")))]
    return [c["id"] for c in sorted(hits, key=lambda c: (len(c["text"]), c["id"]))[:10]]

def longest(query):
    """The ten longest chunks that share any word with the query (a poor retriever)."""
    q = set(WORD.findall(query.lower()))
    hits = [c for c in CHUNKS if q & set(WORD.findall(c["text"].lower()))]
    return [c["id"] for c in sorted(hits, key=lambda c: (-len(c["text"]), c["id"]))[:10]]
'''


def write_corpus(folder: Path, chunks: int = 300, queries: int = 40) -> tuple[list[dict], list[dict]]:
    """Write chunks.jsonl, queries.jsonl and retrievers.py (overlap, names, longest) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    cs = docstring_chunks(chunks)
    qs = first_line_queries(cs, limit=queries)
    (folder / "chunks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs), encoding="utf-8")
    (folder / "retrievers.py").write_text(RETRIEVERS, encoding="utf-8")
    return cs, qs

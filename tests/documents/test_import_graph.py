"""The import graph is what ARCHITECTURE.md draws: no circle among ragassay's modules, counting the
imports inside functions (which hide circles from a reader and from Python until a call runs them),
and own imports inside functions only where a reason is written down here."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "ragassay"

# modules whose own imports may stay inside functions, each with why (a new one needs a reason)
DEFERRED_OWN_IMPORTS = {
    "cli": "the CLI's lazy boundary: --help and a command's parsing import none of the library",
}

# the packages a module outside the CLI may import inside a function, each with why (a new one needs a
# reason); everything else, the standard library included, is imported at the top, where a reader sees it
DEFERRED_PACKAGES = {
    "numpy": "about 0.1 s to import: the light modules the CLI renders with load it only for a value that needs it",
    "openai": "the HTTP client stack takes about a second to import: only a process that calls a model needs it",
    "httpx": "part of the openai client's stack (see openai)",
    "aiohttp": "the fast transport of the openai client's stack (see openai)",
    "httpx_aiohttp": "the fast transport of the openai client's stack (see openai)",
    "tqdm": "a progress bar is drawn only on a terminal: most runs never load it",
    "pyarrow": "an optional extra (fast): the numpy reader runs without it",
    "pandas": "an optional extra: only a DataFrame given or asked for needs it",
    "orjson": "an optional extra (fast): the standard json module reads without it",
    "ir_datasets": "an optional package: only a public set named by its id needs it",
    "bm25s": "the example's extra: only the bundled bm25 retriever needs it",
    "tiktoken": "optional: without it (or offline) token counts are estimated",
    "tomllib": "Python 3.11's TOML reader; on 3.10 tomli is tried instead",
    "tomli": "the TOML reader on Python 3.10 (see tomllib)",
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                found.update(subs + ([target] if len(subs) < len(node.names) else []))
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others():
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle_through_a_deferred_import():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_own_imports_inside_functions_only_where_a_reason_is_written():
    unexplained = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where.split("/")[0] in DEFERRED_OWN_IMPORTS or where in DEFERRED_OWN_IMPORTS:
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                unexplained += [
                    f"{where}:{n.lineno}" for n in ast.walk(function) if isinstance(n, ast.ImportFrom) and n.level > 0
                ]
    assert unexplained == []


def test_other_imports_inside_functions_only_of_packages_given_a_reason():
    unexplained = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where.split("/")[0] in DEFERRED_OWN_IMPORTS:
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(function):
                    if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                        names = [n.module]
                    elif isinstance(n, ast.Import):
                        names = [a.name for a in n.names]
                    else:
                        continue
                    unexplained += [
                        f"{where}:{n.lineno}: {m}"
                        for m in names
                        if m.split(".")[0] not in DEFERRED_PACKAGES and not m.startswith("ragassay")
                    ]
    assert unexplained == []


def test_the_import_checks_see_an_import_inside_a_function(tmp_path, monkeypatch):
    """The two checks above find what they look for: a module with a standard-library and an own import
    inside a function is reported by both."""
    (tmp_path / "planted.py").write_text("def f():\n    import difflib\n    from .x import y\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    with pytest.raises(AssertionError, match="planted.py:2: difflib"):
        test_other_imports_inside_functions_only_of_packages_given_a_reason()
    with pytest.raises(AssertionError, match="planted.py:3"):
        test_own_imports_inside_functions_only_where_a_reason_is_written()


def test_every_module_given_a_reason_still_exists():
    assert all((SRC / where).exists() for where in DEFERRED_OWN_IMPORTS)

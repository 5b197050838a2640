"""The house rules of the tests themselves, checked on their source: a loop of assertions cannot pass
by checking nothing, and the fakes and the example's path live in one place each."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import TESTS, nonempty


def _test_functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
    ]


def _surely_nonempty(node: ast.expr) -> bool:
    """A literal with elements, or a call of the ``nonempty`` guard."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "nonempty":
            return True
        if node.func.id == "range" and node.args and all(isinstance(a, ast.Constant) for a in node.args):
            return len(range(*[a.value for a in node.args])) > 0
        if node.func.id in ("enumerate", "sorted", "reversed", "list", "tuple") and node.args:
            return _surely_nonempty(node.args[0])
        if node.func.id == "zip" and node.args:
            return all(_surely_nonempty(a) for a in node.args)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("items", "values", "keys")
    ):
        return _surely_nonempty(node.func.value)
    return False


def vacuous_loops(source: str, name: str) -> list[str]:
    """Loops in test functions that hold an assert and iterate something that may be empty."""
    tree = ast.parse(source)
    constants = {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign) and _surely_nonempty(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    found = []
    for fn in _test_functions(tree):
        for node in ast.walk(fn):
            if not isinstance(node, (ast.For, ast.AsyncFor)):
                continue
            if not any(isinstance(x, ast.Assert) for x in ast.walk(node)):
                continue
            it = node.iter
            if _surely_nonempty(it) or (isinstance(it, ast.Name) and it.id in constants):
                continue
            found.append(f"{name}:{node.lineno}: for ... in {ast.unparse(it)[:60]}")
    return found


def test_the_loop_rule_catches_a_loop_over_what_may_be_empty_and_passes_a_guarded_one():
    bad = "def test_x(records):\n    for r in records:\n        assert r\n"
    guarded = "def test_x(records):\n    for r in nonempty(records):\n        assert r\n"
    literal = (
        "CASES = [1, 2]\ndef test_x():\n    for c in CASES:\n        assert c\n"
        "    for d in ('a', 'b'):\n        assert d\n"
    )
    no_assert = "def test_x(records):\n    for r in records:\n        print(r)\n"
    empty_literal = (
        "def test_x():\n    for r in []:\n        assert r\n    for i in range(3, 3):\n        assert i\n"
        "    for j in range(3):\n        assert j < 3\n"
    )
    assert vacuous_loops(bad, "t") == ["t:2: for ... in records"]
    assert vacuous_loops(guarded, "t") == vacuous_loops(literal, "t") == vacuous_loops(no_assert, "t") == []
    assert vacuous_loops(empty_literal, "t") == ["t:2: for ... in []", "t:4: for ... in range(3, 3)"]


def test_no_loop_of_assertions_can_pass_by_checking_nothing():
    found = [line for f in nonempty(sorted(TESTS.rglob("test_*.py"))) for line in vacuous_loops(f.read_text(), f.name)]
    assert found == [], "wrap the iterable in helpers.nonempty(...):\n" + "\n".join(found)


def test_the_example_path_is_spelled_in_one_place():
    """Every test reaches the bundled example through helpers.EXAMPLE: a move of the example is one edit."""
    spelled = [
        f"{f.name}:{no}"
        for f in nonempty(sorted(TESTS.rglob("*.py")))
        if f.name != "helpers.py"
        for no, line in enumerate(f.read_text().splitlines(), 1)
        if re.search(r"/ [\"']example[\"']", line) and f.name != "test_house.py"
    ]
    assert spelled == []


def test_every_test_builds_its_llm_with_the_one_shared_builder():
    """No test file has a builder of its own that returns an LLM: fake_llm.make_llm is the one (its
    settings are spelled at each call)."""
    builders = []
    for f in nonempty(sorted(TESTS.rglob("test_*.py"))):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(r, ast.Return)
                and isinstance(r.value, ast.Call)
                and "llm" in getattr(r.value.func, "id", "").lower()
                for r in ast.walk(node)
            ):
                builders.append(f"{f.name}:{node.lineno}: {node.name}")
    assert builders == []


def test_every_llm_stage_is_a_stage_whose_record_model_is_registered():
    """judge, coverage, check and generate each run as a Stage on the one engine, and what each
    journals is a registered record kind: a new stage without its model in the registry fails here.
    A module of stages/ that sends prompts (loads a prompt file) must define its Stage."""
    import importlib
    import pkgutil

    import ragassay.stages
    from ragassay.data.records import RECORDS
    from ragassay.runtime.engine import Stage

    stages, prompting = {}, []
    for info in nonempty(pkgutil.iter_modules(ragassay.stages.__path__)):
        # a stage split into a package (stages/judge/, stages/generate/) is one unit: its modules together
        parts = [importlib.import_module(f"ragassay.stages.{info.name}")]
        if info.ispkg:
            parts += [
                importlib.import_module(m.name)
                for m in pkgutil.walk_packages(parts[0].__path__, f"{parts[0].__name__}.")
            ]
        mine = [
            c
            for module in parts
            for c in vars(module).values()
            if isinstance(c, type) and issubclass(c, Stage) and c is not Stage and c.__module__ == module.__name__
        ]
        stages.update({c.name: c for c in mine})
        if any("load_prompt(" in Path(module.__file__).read_text() for module in parts) and not mine:
            prompting.append(info.name)
    assert sorted(stages) == ["check", "coverage", "generate", "judge"]
    assert prompting == []
    for name, cls in nonempty(stages.items()):
        assert cls.record_model in RECORDS.values(), name

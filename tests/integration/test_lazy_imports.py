"""Each command imports what it runs: building the parser imports no command's handler, and the
metrics core's commands never import the LLM layer, the stages or the product.

Each case runs ``python -m ragassay ...`` in its own process, as ``-m`` runs it, and reads
``sys.modules`` as the process exits: every module imported at any moment of the run counts, the
interpreter's own start, ``ragassay/__main__.py`` and modules imported by name (``importlib``, which
``-X importtime`` does not report) included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import EXAMPLE, nonempty

QRELS, BM25, TFIDF = str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / "bm25.txt"), str(EXAMPLE / "runs" / "tfidf.txt")
SECOND = str(EXAMPLE / "qrels_second_assessor.txt")

# What no metrics command (evaluate, compare, agree) may import, by package: the LLM layer and what
# it stands on, the stages, the Python API of the stages, and the product (reports, tracking, the
# label server). One module of product/ is allowed: `product.formatting`, the text tables every
# command prints with (csv, io and json from the standard library; it sits in product/ for the report).
LLM_AND_STAGES = (
    "openai",
    "httpx",
    "httpcore",
    "tenacity",
    "anyio",
    "ragassay.llm",
    "ragassay.stages",
    "ragassay.runtime",
    "ragassay.api",
)
PRODUCT_ALLOWED = {"ragassay.product", "ragassay.product.formatting"}

# What showing help may import of ragassay: the package, the command line's declarations (any
# cli/declare_*.py) and the few light modules their help texts read (measure names, compare's
# defaults, the errors).
HELP_ALLOWED = {
    "ragassay",
    "ragassay.__main__",
    "ragassay.errors",
    "ragassay.metrics",
    "ragassay.metrics.measures",
    "ragassay.metrics.measures.naming",
    "ragassay.metrics.measures.parsing",
    "ragassay.metrics.measures.registry",
    "ragassay.metrics.significance_settings",
    "ragassay.cli",
    "ragassay.cli.paths",
    "ragassay.cli.values",
    "ragassay.cli.options",
    "ragassay.cli.handlers",
}
# ... and nothing of these, which a command imports only when it runs
HEAVY = (
    "numpy",
    "pydantic",
    "pydantic_core",
    "pyarrow",
    "pandas",
    "scipy",
    "openai",
    "httpx",
    "tenacity",
    "asyncio",
    "sqlite3",
)


def commands() -> dict:
    """Every command's parser, by name, as the command line builds them."""
    import argparse

    from ragassay.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# `python -m ragassay`, with the modules loaded said on stderr as the process exits
RUN_AS_MAIN = (
    "import atexit, json, runpy, sys\n"
    "atexit.register(lambda: print('MODULES', json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
    "sys.argv[0] = 'ragassay'\n"
    "runpy.run_module('ragassay', run_name='__main__', alter_sys=True)\n"
)


def imported(*argv: str) -> tuple[int, set[str], str]:
    """(exit code, every module loaded, stdout) of ``python -m ragassay argv...`` in its own process."""
    env = {**os.environ, "COLUMNS": "100"}
    out = subprocess.run(
        [sys.executable, "-c", RUN_AS_MAIN, *argv], capture_output=True, text=True, timeout=300, env=env
    )
    said = [line for line in out.stderr.splitlines() if line.startswith("MODULES ")]
    assert len(said) == 1, out.stderr[-2000:]
    return out.returncode, set(json.loads(said[0].removeprefix("MODULES "))), out.stdout


def beyond_help(modules: set[str]) -> list[str]:
    """The modules of ragassay that showing help has no use for."""
    return sorted(m for m in of(modules, "ragassay") - HELP_ALLOWED if not m.startswith("ragassay.cli.declare_"))


def of(modules: set[str], *packages: str) -> set[str]:
    """The modules that are one of ``packages`` or inside one."""
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


def test_the_import_listing_sees_what_a_command_imports():
    """The listing is not blind: an evaluate imports numpy, the measures and its own handler module."""
    code, modules, out = imported("evaluate", QRELS, BM25, "-m", "ndcg@10")
    assert code == 0 and "22 queries evaluated" in out
    assert {"numpy", "ragassay.metrics.evaluate", "ragassay.cli.metrics", "ragassay.data.qrels_files"} <= modules
    assert of(modules, "ragassay.cli") >= {"ragassay.cli", "ragassay.cli.metrics", "ragassay.cli.declare_metrics"}


@pytest.mark.parametrize(
    "argv",
    [
        ("evaluate", QRELS, BM25, "-m", "ndcg@10,p@5", "--per-query"),
        ("evaluate", QRELS, BM25, "--format", "json"),
        ("compare", QRELS, BM25, TFIDF, "-m", "ndcg@10", "--permutations", "200", "--bootstrap", "200"),
        ("agree", QRELS, SECOND, "--runs", BM25, TFIDF),
    ],
    ids=["evaluate", "evaluate-json", "compare", "agree"],
)
def test_a_metrics_command_imports_nothing_of_the_llm_layer_the_stages_or_the_product(argv):
    code, modules, out = imported(*argv)
    assert code == 0 and out.strip()
    assert of(modules, *LLM_AND_STAGES) == set()
    assert of(modules, "ragassay.product") <= PRODUCT_ALLOWED
    # nor another area's commands: only the handler module of the command that runs
    assert of(modules, "ragassay.cli.llm_stages", "ragassay.cli.product", "ragassay.cli.label") == set()


@pytest.mark.parametrize(
    "argv",
    [
        ("evaluate", QRELS, BM25, "-m", "ndcg@10,p@5", "--per-query"),
        ("evaluate", QRELS, BM25, "--format", "json", "--per-query"),
        ("evaluate", QRELS, BM25, "--block-queries", "5", "--format", "json"),
    ],
    ids=["text", "json", "blockwise"],
)
def test_evaluate_imports_no_validation_library(argv):
    """evaluate is run in loops over big files: it reads the qrels' origin sidecar (the example's
    qrels have one) and writes its result without pydantic, whose import is a tenth of a second."""
    code, modules, out = imported(*argv)
    assert code == 0 and ("example assessor 1" in out if "json" in argv else "22 queries evaluated" in out)
    assert of(modules, "pydantic", "pydantic_core", "ragassay.data.result_models") == set()


@pytest.mark.parametrize(
    "argv", [("--help",), ("evaluate", "--help"), ("--version",)], ids=["top", "evaluate", "version"]
)
def test_help_imports_only_the_declarations(argv):
    code, modules, out = imported(*argv)
    assert code == 0 and out.startswith(("usage: ragassay", "ragassay "))
    assert beyond_help(modules) == []
    assert of(modules, *HEAVY) == set()


def test_every_command_shows_its_help_importing_no_handler():
    """Every command's --help, each in its own process: exit 0, its own usage line, and no module of a
    command's run imported (a handler module or anything heavy)."""
    names = list(commands())
    assert {"evaluate", "compare", "agree", "retrieve", "judge", "check", "generate", "label", "report"} <= set(names)
    for command in nonempty(names):
        code, modules, out = imported(command, "--help")
        assert code == 0 and out.startswith(f"usage: ragassay {command} "), (command, out[:200])
        assert beyond_help(modules) == [], command
        assert of(modules, *HEAVY) == set(), (command, sorted(of(modules, *HEAVY)))


def test_a_usage_error_imports_no_handler():
    """A misspelt flag is said (with its did-you-mean) from the declarations alone."""
    code, modules, _ = imported("evaluate", QRELS, BM25, "--per-qury")
    assert code == 2
    assert beyond_help(modules) == [] and of(modules, *HEAVY) == set()


def test_every_handler_named_where_a_command_is_declared_is_the_function_that_runs_it():
    """A command's handler is named by module and function where the command is declared, and imported
    when the command runs: each name resolves to a function of that name in that module."""
    import importlib

    for command, parser in nonempty(commands().items()):
        handler = parser.get_default("handler")
        real = getattr(importlib.import_module(handler.__module__), handler.__name__)
        assert callable(real) and real.__name__ == handler.__name__ and real.__module__ == handler.__module__, command
        assert handler.__wrapped__ is real, command


def test_the_format_names_in_help_are_the_ones_tables_are_printed_in():
    """--format's choices are declared without importing the product: they match what render_table prints."""
    from ragassay.cli.options import TABLE_FORMATS
    from ragassay.product.formatting import TABLE_FORMATS as PRINTED

    assert TABLE_FORMATS == PRINTED


def test_compare_help_shows_the_defaults_compare_uses():
    import inspect

    from ragassay.metrics.compare import compare
    from ragassay.metrics.significance_settings import N_BOOTSTRAP, N_PERMUTATIONS, SEED

    params = inspect.signature(compare).parameters
    assert (
        (params["n_permutations"].default, params["n_bootstrap"].default, params["seed"].default)
        == (N_PERMUTATIONS, N_BOOTSTRAP, SEED)
        == (10_000, 10_000, 0)
    )


def test_a_sigterm_that_python_turns_into_another_exception_still_ends_as_a_sigterm(monkeypatch, capsys):
    """A command now imports its handler's modules after parsing, so a SIGTERM can land in the middle
    of `import ssl`, whose ImportError the import system was building: CPython then raises "TypeError:
    expected a message argument" in place of the handler's exception. Any exception after a SIGTERM
    ends the command as the SIGTERM (143, the one line); without one it is raised as it is."""
    import signal

    from ragassay import cli
    from ragassay.cli import metrics

    def mangled(args):
        try:
            cli._raise_terminated(signal.SIGTERM, None)
        except cli._Terminated:
            raise TypeError("expected a message argument") from None

    monkeypatch.setattr(metrics, "run_evaluate", mangled)
    assert cli.main(["evaluate", QRELS, BM25]) == 143
    said = capsys.readouterr()
    assert (
        said.out == ""
        and said.err == "terminated (SIGTERM); a rerun of the same command resumes where this one stopped\n"
    )

    def broken(args):
        raise TypeError("a defect, no signal")

    monkeypatch.setattr(metrics, "run_evaluate", broken)
    with pytest.raises(TypeError, match="a defect, no signal"):
        cli.main(["evaluate", QRELS, BM25])


def test_each_llm_command_loads_its_own_stage_and_not_the_others():
    """``judge`` runs without loading check's or generate's code, and ``check`` without generate's: the
    api package and the commands' handlers import a stage's stack only when its command runs (a dry
    run, so no endpoint is needed; it still reads every input and plans every call)."""
    example = EXAMPLE
    code, modules, out = imported(
        "judge",
        "--queries",
        str(example / "queries.jsonl"),
        "--chunks",
        str(example / "chunks.jsonl"),
        "--run",
        BM25,
        "-o",
        os.devnull,
        "--model",
        "gpt-4o-mini",
        "--no-cache",
        "--dry-run",
    )
    assert code == 0 and "calls" in out, out[-500:]
    assert "ragassay.stages.judge" in modules and "ragassay.api.judge_call" in modules
    assert (
        of(
            modules,
            "ragassay.stages.check",
            "ragassay.stages.generate",
            "ragassay.api.check_call",
            "ragassay.api.generate_call",
        )
        == set()
    )
    code, modules, out = imported(
        "check",
        str(example / "answers.jsonl"),
        "--chunks",
        str(example / "chunks.jsonl"),
        "-o",
        os.devnull,
        "--model",
        "gpt-4o-mini",
        "--no-cache",
        "--dry-run",
    )
    assert code == 0 and "ragassay.stages.check" in modules, out[-500:]
    assert of(modules, "ragassay.stages.generate", "ragassay.api.generate_call", "ragassay.api.judge_call") == set()

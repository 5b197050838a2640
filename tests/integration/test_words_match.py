"""The words match the behaviour: every flag a message suggests is a flag of each command that can
print it, every exit code a help text states is the code the command returns, an endpoint that
answers 404/405 under a base URL without /v1 gets the URL with /v1 to try, and the README's wheel
line works from any directory.

Which command can print a message is found from the source (the functions a command's handler
reaches, call by call, through imports); where that finds a message a command can in fact never
print, ``NOT_PRINTED`` says why, and the entries that matter most are shown by running the command."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import subprocess
import sys
import threading
from functools import cache, lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import respx
from pydantic import BaseModel

from fake_llm import SERVE_POLL, FakeLLM, dead_url, make_llm
from helpers import EXAMPLE, ROOT, nonempty
from ragassay.cli import build_parser, main
from ragassay.llm import LLMError
from ragassay.llm.failures import v1_base_url

SRC = ROOT / "src" / "ragassay"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def commands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


COMMANDS = commands()


def takes(command: str, flag: str) -> bool:
    return any(flag in a.option_strings for a in COMMANDS[command]._actions)


# ------------------------------------------------------------------ who says a flag, and whose it is

FLAG = re.compile(r"(?<![\w-])--(?:[a-z][a-z0-9-]*[a-z0-9]|\{)|(?:(?<=[\s(`])|^)-[a-z](?=[\s),/`]|$)")
NAMES = "|".join(sorted(COMMANDS, key=len, reverse=True))
LISTED = rf"(?:{NAMES})(?:, (?:{NAMES}))*(?:,? and (?:{NAMES}))?"


def owners(text: str, start: int) -> set[str] | None:
    """The commands a flag at ``text[start:]`` is said to belong to, when the words name them:
    ``ragassay judge ... --depth 5`` (a command line), ``judge --keep``, ``evaluate and compare take
    --dedupe``; ``{"external"}`` for another program's command line (``vllm run-batch ... --model M``).
    None: the flag is offered to whoever reads the text, the command that prints it."""
    before = text[max(0, start - 400) : start]  # the words that go with it are close
    line = re.match(rf"ragassay ({NAMES}|\{{\S*)[^;()`]*$", before[before.rfind("ragassay ") :])  # the last one
    if line:
        return set(COMMANDS) if line.group(1).startswith("{") else {line.group(1)}  # {kinds}: any of them
    listed = re.search(rf"\b({LISTED}) takes? $", before) or re.search(rf"\b({NAMES}) $", before)
    if listed:
        return set(re.findall(NAMES, listed.group(1)))
    if re.search(r"\b(?:vllm|trec_eval|git) [^;()]*$", before):  # another program's flags
        return {"external"}
    return None


def flags_in(text: str) -> list[tuple[str, int]]:
    """(flag, where) of every flag in ``text``, but CSS custom properties (``--line: #d8dde6``,
    ``var(--line)``) of the label page."""
    return [
        (m.group(0), m.start())
        for m in FLAG.finditer(text)
        if not text.startswith(":", m.end()) and not text.endswith("var(", 0, m.start())
    ]


def untaken(text: str, command: str) -> list[str]:
    """The flags ``text`` offers that ``command`` (the one printing it) does not take, and the flags
    it gives to named commands that do not take them."""
    wrong = []
    for flag, at in flags_in(text):
        named = owners(text, at)
        if named is None and not takes(command, flag):
            wrong.append(flag)
        elif named and named != {"external"}:
            wrong += [f"{flag} (said of {c})" for c in sorted(named) if not takes(c, flag)]
    return wrong


def test_the_words_rules_read_flags_and_their_commands():
    said = "pass --run-format; evaluate and compare take --dedupe; judge --keep; vllm run-batch -o OUT --model M"
    assert [f for f, _ in flags_in(said)] == ["--run-format", "--dedupe", "--keep", "-o", "--model"]
    assert [owners(said, at) for _, at in flags_in(said)] == [
        None,
        {"evaluate", "compare"},
        {"judge"},
        {"external"},
        {"external"},
    ]
    assert owners("ragassay demo --model gpt-4o-mini   (or --base-url URL)", 14) == {"demo"}
    line = "ragassay evaluate q r --format json > r.json && ragassay track r.json --label x"
    assert owners(line, line.index("--label")) == {"track"} and owners(line, line.index("--format")) == {"evaluate"}
    assert owners("ragassay demo --model gpt-4o-mini   (or --base-url URL)", 40) is None
    assert untaken("unknown (pass --price-in/--price-out)", "ping") == ["--price-in", "--price-out"]
    assert untaken("unknown (pass --price-in/--price-out)", "judge") == []
    assert untaken("check --max-response-chars 9 raises it", "demo") == []
    assert untaken("judge --max-response-chars 9 raises it", "demo") == ["--max-response-chars (said of judge)"]
    assert flags_in(":root { --line: #d8dde6; } a { color: var(--line); }") == []


# ------------------------------------------------------------------------- which code reaches what


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=1)
def modules() -> dict[str, tuple[ast.Module, dict[str, ast.stmt], dict[str, tuple]]]:
    """module -> (its syntax tree, its top-level names and their statements, its module-level imports)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        name, tree = _module_name(path), ast.parse(path.read_text(encoding="utf-8"))
        top: dict[str, ast.stmt] = {}
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                top[st.name] = st
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                for target in st.targets if isinstance(st, ast.Assign) else [st.target]:
                    top.update({n.id: st for n in ast.walk(target) if isinstance(n, ast.Name)})
        out[name] = (tree, top, {})
    for name, (tree, _top, imports) in out.items():
        imports.update(
            _imports(
                name,
                [st for st in tree.body if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))],
                out,
            )
        )
    return out


def _imports(module: str, nodes: list[ast.AST], known: dict) -> dict[str, tuple]:
    """alias -> ("module", M) or ("name", M, N), for ragassay's own imports among ``nodes``."""
    out: dict[str, tuple] = {}
    package = module if (SRC.parent / module.replace(".", "/") / "__init__.py").exists() else module.rsplit(".", 1)[0]
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Import):
            out.update(
                {
                    (a.asname or a.name.split(".")[0]): ("module", a.name if a.asname else "ragassay")
                    for a in node.names
                    if a.name.startswith("ragassay")
                }
            )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if base.startswith("ragassay"):
                for a in node.names:
                    full = f"{base}.{a.name}"
                    out[a.asname or a.name] = ("module", full) if full in known else ("name", base, a.name)
    return out


def _resolve(module: str, name: str, seen: frozenset = frozenset()) -> set[tuple[str, str]]:
    """The top-level definitions ``name`` stands for in ``module`` (following re-exports)."""
    mods = modules()
    if module not in mods or (module, name) in seen:
        return set()
    _, top, imports = mods[module]
    if name in top:
        return {(module, name)}
    if name in imports:
        target = imports[name]
        return _whole(target[1]) if target[0] == "module" else _resolve(target[1], target[2], seen | {(module, name)})
    return _whole(f"{module}.{name}")


def _whole(module: str) -> set[tuple[str, str]]:
    return {(module, n) for n in modules().get(module, (None, {}, None))[1]}


@cache
def _references(module: str, name: str) -> frozenset[tuple[str, str]]:
    """The definitions a top-level definition refers to: names of its module, names it imports (at
    the top of the module or inside itself), and ``alias.name`` of an imported module."""
    _, top, imports = modules()[module]
    st = top[name]
    local = {**imports, **_imports(module, [st], modules())}
    out: set[tuple[str, str]] = set()

    def of(name: str) -> tuple[str, str | None] | None:
        if name in local:
            t = local[name]
            return (t[1], None) if t[0] == "module" else (t[1], t[2])
        return (module, name) if name in top else None

    bases = {id(n.value) for n in ast.walk(st) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    for n in ast.walk(st):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            target = of(n.value.id)
            if target is not None:
                out |= _resolve(target[0], n.attr) if target[1] is None else _resolve(*target)
        elif isinstance(n, ast.Name) and id(n) not in bases:
            target = of(n.id)
            if target is not None:
                out |= _whole(target[0]) if target[1] is None else _resolve(*target)
    return frozenset(out)


@lru_cache(maxsize=1)
def _registrations() -> frozenset[tuple[str, str]]:
    """The functions that add a command's parser (help texts only, checked from the parsers): a
    command's run never goes through another command's parser."""
    return frozenset(
        (m, name)
        for m, (_, top, _) in modules().items()
        if m.startswith("ragassay.cli")
        for name, st in top.items()
        if isinstance(st, ast.FunctionDef)
        and any(isinstance(n, ast.Attribute) and n.attr == "add_parser" for n in ast.walk(st))
    )


@cache
def reached(command: str) -> frozenset[tuple[str, str]]:
    """Every top-level definition a run of ``command`` may execute: from its handler and ``main``,
    through every name they refer to. More than it runs (all of a class, every branch), never less,
    but for calls the source does not name (getattr, a user's retriever)."""
    handler = COMMANDS[command].get_default("handler")
    stop = _registrations()
    todo, seen = [(handler.__module__, handler.__name__), ("ragassay.cli", "main")], set(stop)
    while todo:
        key = todo.pop()
        if key in seen or key[1] not in modules()[key[0]][1]:
            continue
        seen.add(key)
        todo += _references(*key)
    return frozenset(seen - stop)


HELP_KEYWORDS = {"help", "description", "epilog"}  # read from the parsers: test_every_help_text_...


def _text(node: ast.AST) -> str | None:
    """A string constant, or an f-string with ``{}`` for each value put in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


@lru_cache(maxsize=1)
def flag_sites() -> list[tuple[str, str, int, str, str, int]]:
    """(module, top-level name, line, flag, text, where) of every flag in a string of the package
    that a user may read: not docstrings, not the flag names a parser is given, not help texts."""
    out = []
    for module, (tree, top, _) in modules().items():
        skip: set[int] = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
            ):
                skip.add(id(body[0].value))
            if isinstance(node, ast.JoinedStr):
                skip |= {id(v) for v in node.values}
            if isinstance(node, ast.Call):
                if getattr(node.func, "attr", None) == "add_argument":
                    skip |= {id(a) for a in node.args}
                skip |= {id(n) for kw in node.keywords if kw.arg in HELP_KEYWORDS for n in ast.walk(kw.value)}
        for st in tree.body:
            name = next((n for n, s in top.items() if s is st), "<module>")
            for node in ast.walk(st):
                text = None if id(node) in skip else _text(node)
                for flag, at in flags_in(text or ""):
                    out.append((module, name, node.lineno, flag, text, at))
    return out


# Where the reach above finds a message that a command can never print: (module:definition, flags,
# commands, why). An entry that is no longer needed fails (test_every_not_printed_entry_is_needed).
NOT_PRINTED = [
    ("llm.usage:Usage", ("--price-in", "--price-out"), ("ping",), "ping prints no usage line"),
    (
        "llm.send_limits:SendLimits",
        ("--max-calls", "--max-cost"),
        ("ping",),
        "a spending ceiling: set only by the flags it names",
    ),
    (
        "llm.config:LLMConfig",
        ("--max-cost", "--price-in", "--price-out"),
        ("ping",),
        "a price needed by a cost ceiling: set only by --max-cost",
    ),
    (
        "llm.cache:Cache",
        ("--cache", "--no-cache"),
        ("ping",),
        "ping turns the cache off: test_ping_names_no_cache_flag_even_when_the_cache_is_broken",
    ),
    ("product.tracking:git_commit", ("--short",), tuple(COMMANDS), "git's flag (git rev-parse --short=12), not ours"),
    # run (product/pipeline.py) calls the stages' Python functions with values its project file checked
    # (read_project) and the defaults of every other flag: their argument checks cannot fail for it. The
    # demo is run over the example's project file (product/demo.py): it reaches and passes the same
    (
        "api.judge_call:_judge_ranges",
        ("--samples", "--batch", "--depth", "--max-chunk-chars"),
        ("run", "demo"),
        "run passes depth >= 1 (checked in the project file) and the defaults of the others",
    ),
    (
        "api.check_call:check",
        ("--run", "--qrels"),
        ("run", "demo"),
        "run passes the run and the qrels together or neither",
    ),
    (
        "api.check_call:_check_ranges",
        ("--samples", "--max-response-chars", "--max-context-chars"),
        ("run", "demo"),
        "run passes the defaults",
    ),
    (
        "api.check_inputs:people_labels",
        ("--human",),
        ("run", "demo"),
        "run meets the answers with the human labels itself first (pipeline._check_inputs)",
    ),
    ("api.check_inputs:_breakdown_fields", ("--by",), ("run", "demo"), "run passes no breakdown"),
    (
        "stages.judge.prompt:Judge",
        ("--batch", "--cache-friendly"),
        ("run", "demo"),
        "run passes the defaults: pointwise, no --cache-friendly, so any prompt can serve",
    ),
    (
        "llm.prompt_files:choose_prompt",
        ("--prompt",),
        ("run", "demo"),
        "run passes no --batch nor --cache-friendly, and the reason for a prompt is said only when not quiet: run is",
    ),
    ("llm.prompt_files:_auto", ("--prompt",), ("run", "demo"), "said only when not quiet: run is quiet"),
    (
        "api.generate_call:generate",
        ("--mix", "--styles", "--max-per-doc"),
        ("run", "demo"),
        "run passes their defaults",
    ),
    ("stages.generate_checks:parse_mix", ("--mix",), ("run", "demo"), "run passes the default mix"),
    ("stages.generate_job:wanted", ("--limit",), ("run", "demo"), "pipeline._generate says it as [generate] limit"),
    (
        "stages.generate.generator:Generator",
        ("--limit",),
        ("run", "demo"),
        "pipeline._generate says it as [generate] limit",
    ),
    (
        "stages.generate.result:GenerateResult",
        ("--limit", "--seed"),
        ("run", "demo"),
        "summary(): run prints its own line",
    ),
    ("stages.exports:export_format", ("--export",), ("run", "demo"), "run exports nothing"),
    ("runtime.engine.work:parse_shard", ("--shard",), ("run", "demo"), "run passes no shard"),
    (
        "runtime.scaffold:Backend",
        ("--backend", "--export-requests", "--import-results"),
        ("run", "demo"),
        "run calls live, with no batch files",
    ),
    ("llm.batch_api:run_rounds", ("--export-requests",), ("run", "demo"), "run calls live, never the Batch API"),
    ("stages.judge.result:JudgeResult", ("--keep",), ("run", "demo"), "text(): run prints its own line of a judge run"),
    ("stages.judge.job:_qrels_origin", ("--keep",), ("run", "demo"), "only for kept labels: run keeps none"),
    ("stages.answer_files:read_answers", ("--chunks",), ("run", "demo"), "run checks answers only with the chunks"),
    # a clause that begins with a flag is advice to the command at hand, said only when it takes the flag
    (
        "data.column_formats:_undetected",
        ("--run-format",),
        ("agree", "check", "demo", "judge", "label", "qualify", "report", "run"),
        "cli/hints.py drops '--run-format names it' for a command without it",
    ),
    (
        "data.column_formats:_undetected",
        ("--qrels-format",),
        ("check", "demo", "judge", "label", "qualify", "report", "run"),
        "cli/hints.py drops '--qrels-format names it' for a command without it",
    ),
    (
        "data.roles:refuse_grades_as_run",
        ("--run-format",),
        ("agree", "check", "demo", "qualify", "report", "run"),
        "cli/hints.py drops '--run-format names its format' for a command without it",
    ),
    ("product.report:build_report", ("--qrels", "--run"), ("run", "demo"), "run gives result files or qrels with runs"),
    (
        "api.check_inputs:diagnosis_inputs",
        ("--queries",),
        ("run", "demo"),
        "run meets the answers with the queries itself (pipeline._check_inputs stops on ids that meet nowhere) and "
        "passes "
        "their query ids",
    ),
    (
        "api.check_inputs:queries_by_text",
        ("--queries",),
        ("run", "demo"),
        "run passes check no queries= (it matched them itself)",
    ),
    (
        "runtime.engine.work:parse_shard",
        ("--shard",),
        ("generate",),
        "generate takes no shard: api/settings.shard_of, which reads one, is judge's and check's",
    ),
    (
        "data.roles:check_columns",
        ("--run-format",),
        ("agree", "check", "demo", "judge", "label", "qualify", "report", "run"),
        "cli/hints.py drops '--run-format trec3 (...)' for a command without it",
    ),
    (
        "data.roles:check_columns",
        ("--qrels-format",),
        ("check", "demo", "judge", "label", "qualify", "report", "run"),
        "cli/hints.py drops '--qrels-format trec (...)' for a command without it",
    ),
    (
        "data.query_files:_jsonl_queries",
        ("--chunks",),
        ("run", "demo"),
        "cli/hints.py drops 'give it as --chunks' for a command without it",
    ),
    (
        "stages.queries:read_query_items",
        ("--chunks",),
        ("run", "demo"),
        "cli/hints.py drops 'give it as --chunks' for a command without it",
    ),
    (
        "product.tracking:gate",
        ("--allow-errors",),
        ("run", "demo"),
        "run gates evaluate results, which hold no error items",
    ),
    ("product.tracking:History", ("--db",), ("run", "demo"), "pipeline._track says the history's path instead"),
    # qualify calls the stages' Python functions with a sample it built: the run and qrels never, one sample,
    # the default lengths, no breakdown, no human labels, pointwise and live, no shard, nothing kept
    (
        "api.judge_call:_judge_ranges",
        ("--samples", "--batch", "--depth", "--max-chunk-chars"),
        ("qualify",),
        "qualify passes depth >= 1 (the most pairs of one sampled query) and the defaults of the others",
    ),
    (
        "api.check_call:_check_ranges",
        ("--samples", "--max-response-chars", "--max-context-chars"),
        ("qualify",),
        "qualify passes answers only, with the defaults",
    ),
    ("api.check_inputs:people_labels", ("--human",), ("qualify",), "qualify passes no human labels"),
    ("api.check_inputs:_breakdown_fields", ("--by",), ("qualify",), "qualify passes no breakdown"),
    ("stages.judge.prompt:Judge", ("--batch", "--cache-friendly"), ("qualify",), "qualify judges pointwise"),
    ("runtime.engine.work:parse_shard", ("--shard",), ("qualify",), "qualify passes no shard"),
    (
        "runtime.scaffold:Backend",
        ("--backend", "--export-requests", "--import-results"),
        ("qualify",),
        "qualify calls live, with no batch files",
    ),
    ("llm.batch_api:run_rounds", ("--export-requests",), ("qualify",), "qualify calls live, never the Batch API"),
    (
        "stages.judge.result:JudgeResult",
        ("--keep",),
        ("qualify",),
        "text(): qualify prints its own lines of a judge run",
    ),
    ("stages.judge.job:_qrels_origin", ("--keep",), ("qualify",), "only for kept labels: qualify keeps none"),
    (
        "product.pipeline.run:one_step",
        ("--only", "--from"),
        ("demo",),
        "the demo runs every step: it passes no --only or --from",
    ),
    (
        "product.pipeline.run:run_project",
        ("--only", "--from", "--append"),
        ("demo",),
        "the demo passes no --only, --from or --append, and the example names its queries",
    ),
]


def _not_printed() -> dict[tuple[str, str, str], str]:
    return {
        (f"ragassay.{where.split(':')[0]}", where.split(":")[1], flag, command): why
        for where, flags, names, why in NOT_PRINTED
        for flag in flags
        for command in names
    }


# The reach of every command (reached, flag_sites) is worked out once per process and kept (lru_cache), about
# 4 s: the tests that read it go to one xdist worker together, so that it is worked out once in a run.
SHARES_THE_REACH = pytest.mark.xdist_group("test_words_match_reach")


@SHARES_THE_REACH
def test_every_flag_a_message_suggests_is_taken_by_each_command_that_can_print_it():
    excused, wrong = _not_printed(), []
    for module, name, line, flag, text, at in nonempty(flag_sites()):
        where = f"{module.replace('.', '/')}.py:{line} ({name})"
        if "{" in flag:
            wrong.append(f"{where}: {flag}... is built at run time: spell the flag out so that it can be checked")
            continue
        named = owners(text, at)
        if named is not None:
            wrong += [
                f"{where}: {flag}, said of {c}, is not a flag of {c}"
                for c in sorted(named)
                if c != "external" and not takes(c, flag)
            ]
            continue
        for command in nonempty(sorted(COMMANDS)):
            if (
                (module, name) in reached(command)
                and not takes(command, flag)
                and (module, name, flag, command) not in excused
            ):
                wrong.append(
                    f"{where}: {command} can print {flag} ({text[max(0, at - 50) : at + 40]!r}), and does not take it"
                )
    assert wrong == [], "\n".join(wrong)


@SHARES_THE_REACH
def test_every_not_printed_entry_is_needed():
    """Each excuse names a message the reach finds for a command that does not take its flag."""
    sites = {(m, n, f) for m, n, _, f, text, at in flag_sites() if owners(text, at) is None}
    for (module, name, flag, command), why in nonempty(_not_printed().items()):
        assert (module, name, flag) in sites, f"no longer said: {module}:{name} {flag}"
        if "git's flag" in why:
            continue
        assert (module, name) in reached(command), f"{command} no longer reaches {module}:{name}"
        assert not takes(command, flag), f"{command} takes {flag} now: the entry is not needed"


@SHARES_THE_REACH
def test_the_reach_is_neither_empty_nor_everything():
    """The analysis finds what a command runs, and not what it cannot: judge reads runs, the demo
    prints usage, evaluate calls no model, ping judges nothing."""
    assert ("ragassay.data.column_formats", "detect_format") in reached("judge")
    assert ("ragassay.data.tables", "Run") in reached("agree")
    assert ("ragassay.llm.usage", "Usage") in reached("demo")
    assert ("ragassay.llm.client", "LLM") in reached("ping")
    assert not any(m.startswith("ragassay.llm") for m, _ in reached("evaluate"))
    assert not any(m.startswith("ragassay.stages.judge") for m, _ in reached("ping"))
    assert ("ragassay.cli", "_unrecognized") in reached("history")  # main's own messages reach every command
    assert len(flag_sites()) >= 40


def test_every_help_text_names_flags_of_its_own_command_or_of_the_command_it_names():
    wrong = []
    for name, parser in nonempty(COMMANDS.items()):
        texts = [parser.description or "", parser.epilog or ""] + [a.help or "" for a in parser._actions]
        for text in nonempty(texts):
            wrong += [f"{name} --help: {w}" for w in untaken(text, name)]
    assert wrong == [], "\n".join(wrong)


# ------------------------------------------------------------------------ the messages, as printed


def run(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_qrels_file_given_as_a_run_is_told_in_words_the_command_takes(tmp_path, capsys):
    """judge has no --run-format: its message names no flag it lacks (issue 45); evaluate has it."""
    judge = [
        "judge",
        "--queries",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--run",
        str(EXAMPLE / "qrels.txt"),
        "-o",
        str(tmp_path / "j.jsonl"),
        "--base-url",
        dead_url(),
        "--model",
        "m",
    ]
    code, said = run(capsys, judge)
    assert code == 1 and "looks like a qrels file, not a run" in said  # the evidence, and no flag judge lacks
    assert "--run-format" not in said and untaken(said, "judge") == []
    code, said = run(capsys, ["evaluate", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "qrels.txt")])
    assert code == 1 and "looks like a qrels file, not a run" in said and untaken(said, "evaluate") == []


def test_a_run_listing_a_document_twice_is_told_in_words_the_command_takes(tmp_path, capsys):
    twice = tmp_path / "twice.txt"
    twice.write_text("q01 Q0 d1 1 2.0 r\nq01 Q0 d1 2 1.0 r\n")
    qrels = str(EXAMPLE / "qrels.txt")
    for argv in nonempty([["agree", qrels, qrels, "--runs", str(twice), str(twice)], ["evaluate", qrels, str(twice)]]):
        code, said = run(capsys, argv)
        assert code == 1 and "--dedupe" in said and untaken(said, argv[0]) == [], said


def test_the_demo_names_no_flag_it_does_not_take(tmp_path, monkeypatch, capsys):
    """Against a model without a price, and with a default answer cache that is not ragassay's: the
    demo runs, says the cost is unknown and that it goes on without the cache, in its own words."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(var, raising=False)
    cache = tmp_path / "xdg" / "ragassay" / "llm-cache.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_text("not a database\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with FakeLLM() as fake:
        code, said = run(capsys, ["demo", "-o", str(tmp_path / "d"), "--base-url", fake.url, "--model", "fake"])
    assert code == 0, said
    assert "cost unknown (pass --price-in/--price-out)" in said  # demo takes the stages' LLM flags
    assert f"answer cache {cache}: not an SQLite database" in said and "goes on without one" in said
    assert untaken(said, "demo") == []


def test_ping_names_no_cache_flag_even_when_the_cache_is_broken(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "xdg" / "ragassay" / "llm-cache.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_text("not a database\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with FakeLLM() as fake:
        code, said = run(capsys, ["ping", "--base-url", fake.url, "--model", "fake"])
    assert code == 0 and "status:              ok" in said and untaken(said, "ping") == []


# ---------------------------------------------------------------------- exit codes the help states

EXIT_WORDS = re.compile(rf"(?:\b({NAMES}) )?\bexit(?:s|ing)?(?: with)?(?: code)?(?: is)? (\d+)\b", re.I)


def stated_exits() -> set[tuple[str, str, int]]:
    """(command, where in its help, code) of every exit code a help text states; the command is the
    one the words name (``generate exits 1 ...`` in a help text several commands share), else the
    help's own."""
    out = set()
    for name, parser in COMMANDS.items():
        texts = [("description", parser.description or ""), ("epilog", parser.epilog or "")] + [
            (a.option_strings[0] if a.option_strings else a.dest, a.help or "") for a in parser._actions
        ]
        out |= {
            (m.group(1) or name, where, int(m.group(2))) for where, text in texts for m in EXIT_WORDS.finditer(text)
        }
    return out


def test_the_exit_words_are_found():
    found = EXIT_WORDS.finditer(
        "Exits 1 and names it; exits 0 when all hold; conflicts (exit 3); exit code 2; "
        "generate exits 1 when; show this help message and exit"
    )
    assert [m.groups() for m in found] == [(None, "1"), (None, "0"), (None, "3"), (None, "2"), ("generate", "1")]


@pytest.fixture()
def work(tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _ping_unusable(capsys, fake_url: str) -> int:
    return main(["ping", "--base-url", dead_url(), "--model", "m"])


def _gate(capsys, fake_url: str, threshold: str) -> int:
    code = main(["evaluate", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / "bm25.txt"), "--format", "json"])
    Path("ev.json").write_text(capsys.readouterr().out)
    assert code == 0
    return main(["gate", "ev.json", "--min", threshold])


def _merge_conflict(capsys, fake_url: str) -> int:
    argv = [
        "judge",
        "--queries",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--run",
        str(EXAMPLE / "runs" / "bm25.txt"),
        "--depth",
        "1",
        "-o",
        "a.jsonl",
        "--base-url",
        fake_url,
        "--model",
        "fake",
        "--no-cache",
    ]
    assert main(argv) == 0
    first, *rest = Path("a.jsonl").read_text().splitlines()
    record = json.loads(first)
    record["grade"] = (record["grade"] + 1) % 4  # the same pair, graded otherwise
    Path("b.jsonl").write_text("\n".join([json.dumps(record), *rest]) + "\n")
    return main(["merge", "a.jsonl", "b.jsonl", "-o", "m.jsonl"])


def _max_calls(stage: str, ceiling: int = 1):
    def trigger(capsys, fake_url: str) -> int:
        llm = ["--base-url", fake_url, "--model", "fake", "--no-cache", "--max-calls", str(ceiling)]
        argv = {
            "generate": ["generate", str(EXAMPLE / "chunks.jsonl"), "-o", "q.jsonl", "--limit", "3"],
            "judge": [
                "judge",
                "--queries",
                str(EXAMPLE / "queries.jsonl"),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "--run",
                str(EXAMPLE / "runs" / "bm25.txt"),
                "--depth",
                "2",
                "-o",
                "j.jsonl",
            ],
            "check": [
                "check",
                str(EXAMPLE / "answers.jsonl"),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                "c.jsonl",
            ],
        }[stage]
        return main(argv + llm)

    return trigger


# (command, where its help says it, the code) -> a run in that situation, returning its exit code
def _run_max_calls(url: str) -> int:
    """run on a copy of the example, its project file written by init: the judge stops at the ceiling."""
    import shutil

    shutil.copytree(EXAMPLE, "p", ignore=shutil.ignore_patterns("__pycache__", "ragassay.toml"))
    assert main(["init", "p"]) == 0
    return main(["run", "p/ragassay.toml", "--base-url", url, "--model", "fake", "--no-cache", "--max-calls", "5"])


EXITS = {
    ("ping", "description", 1): _ping_unusable,
    ("gate", "description", 1): lambda capsys, url: _gate(capsys, url, "ndcg@10=0.99"),
    ("gate", "description", 0): lambda capsys, url: _gate(capsys, url, "ndcg@10=0.1"),
    ("merge", "description", 3): _merge_conflict,
    ("generate", "--max-calls", 3): _max_calls("generate", 12),
    ("generate", "--max-calls", 1): _max_calls("generate", 1),
    ("judge", "--max-calls", 3): _max_calls("judge"),
    ("check", "--max-calls", 3): _max_calls("check"),
    ("demo", "--max-calls", 3): lambda capsys, url: main(
        ["demo", "-o", "d", "--base-url", url, "--model", "fake", "--no-cache", "--max-calls", "5"]
    ),
    ("run", "--max-calls", 3): lambda capsys, url: _run_max_calls(url),
    ("qualify", "--max-calls", 3): lambda capsys, url: main(
        [
            "qualify",
            "judge",
            "-o",
            "q",
            "--size",
            "20",
            "--base-url",
            url,
            "--model",
            "fake",
            "--no-cache",
            "--max-calls",
            "5",
        ]
    ),
}


def test_every_exit_code_a_help_text_states_is_in_the_table():
    assert stated_exits() == set(EXITS), (
        "a help text states an exit code this test does not run (or no longer states one)"
    )


@pytest.mark.parametrize("statement", sorted(EXITS), ids=lambda s: f"{s[0]}-{s[1]}-{s[2]}")
def test_every_exit_code_a_help_text_states_is_the_code_returned(statement, work, capsys):
    with FakeLLM() as fake:
        code = EXITS[statement](capsys, fake.url)
    assert code == statement[2], (statement, capsys.readouterr().err)


# ------------------------------------------------------------------ a base URL without /v1: 404/405


def test_the_v1_base_url_is_the_url_with_v1_appended_or_cut_after_it():
    assert v1_base_url("http://localhost:8080") == "http://localhost:8080/v1"
    assert v1_base_url("http://localhost:8080/") == "http://localhost:8080/v1"
    assert v1_base_url("http://host/openai") == "http://host/openai/v1"
    assert v1_base_url("http://host/v1/chat/completions") == "http://host/v1"  # the endpoint given as the base
    for ends_in_v1 in nonempty(["http://host/v1", "http://host/v1/", "https://openrouter.ai/api/v1", None]):
        assert v1_base_url(ends_in_v1) is None
    for other_version in nonempty(["https://host/v1beta/openai", "https://host/v2"]):
        assert v1_base_url(other_version) is None


class Echo(BaseModel):
    ok: bool


@pytest.mark.parametrize("status", [404, 405])
async def test_a_404_or_405_under_a_base_url_without_v1_suggests_it(tmp_path, status):
    with respx.mock:
        route = respx.post("http://llm.test:8080/chat/completions").mock(
            return_value=httpx.Response(status, json={"detail": "Not Found"})
        )
        llm = make_llm(tmp_path, "http://llm.test:8080", use_cache=False)
        with pytest.raises(LLMError) as e:
            await llm.ask([{"role": "user", "content": "hi"}], Echo)
    assert route.call_count == 1  # not retried: asking again changes nothing
    assert e.value.kind == "request"
    assert str(e.value).startswith(
        f"http://llm.test:8080 answered {status} for /chat/completions: OpenAI-compatible "
        "servers usually serve under /v1; try --base-url http://llm.test:8080/v1"
    )


async def test_a_404_under_a_base_url_ending_in_v1_suggests_nothing(tmp_path):
    with respx.mock:
        respx.post("http://llm.test/v1/chat/completions").mock(
            return_value=httpx.Response(404, json={"error": {"message": "The model `m` does not exist"}})
        )
        llm = make_llm(tmp_path, "http://llm.test/v1", use_cache=False)
        with pytest.raises(LLMError) as e:
            await llm.ask([{"role": "user", "content": "hi"}], Echo)
    assert "/v1;" not in str(e.value) and "--base-url" not in str(e.value)
    assert "the endpoint rejected the request (HTTP 404): The model `m` does not exist" in str(e.value)


async def test_other_refusals_suggest_no_v1(tmp_path):
    with respx.mock:
        respx.post("http://llm.test/chat/completions").mock(
            return_value=httpx.Response(400, json={"error": {"message": "bad request"}})
        )
        llm = make_llm(tmp_path, "http://llm.test", use_cache=False)
        with pytest.raises(LLMError) as e:
            await llm.ask([{"role": "user", "content": "hi"}], Echo)
    assert "/v1" not in str(e.value)


class _NotFound(BaseHTTPRequestHandler):
    """A web server that is not the API under this path: 404 for everything."""

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b'{"detail": "Not Found"}'
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST


@pytest.fixture()
def not_found_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SERVE_POLL}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_ping_against_a_base_url_without_v1_says_to_add_it(not_found_server, capsys):
    code, said = run(capsys, ["ping", "--base-url", not_found_server, "--model", "m"])
    assert code == 1
    assert (
        f"{not_found_server} answered 404 for /chat/completions: OpenAI-compatible servers usually serve under "
        f"/v1; try --base-url {not_found_server}/v1" in said
    )
    code, said = run(capsys, ["ping", "--base-url", not_found_server + "/v1", "--model", "m"])
    assert code == 1 and "HTTP 404" in said and "try --base-url" not in said


def test_the_batch_api_under_a_base_url_without_v1_says_to_add_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = [
        "check",
        str(EXAMPLE / "answers.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--model",
        "m",
        "--quiet",
        "--backend",
        "batch",
        "--poll-seconds",
        "1",
        "--no-cache",
        "-o",
        str(tmp_path / "b.jsonl"),
    ]
    with respx.mock(assert_all_called=False) as mock:
        mock.post("http://llm.test/files").mock(return_value=httpx.Response(404, json={"detail": "Not Found"}))
        code, said = run(capsys, argv + ["--base-url", "http://llm.test"])
    assert code == 1
    assert (
        "the Batch API at http://llm.test answered 404: OpenAI-compatible servers usually serve under /v1; "
        "try --base-url http://llm.test/v1" in said
    )


# ------------------------------------------------------------------------- the README's wheel line


def install_paragraph() -> list[str]:
    """The inline commands of the README's paragraph on installing the wheel."""
    start = README.index("ragassay is not on PyPI yet")
    return re.findall(r"`(pip [^`]+)`", README[start : README.index("\n\n", start)])


def test_the_readmes_wheel_line_installs_from_any_directory(tmp_path):
    """Build as the README says, in the clone (offline: the build tools of this environment), then
    from an empty directory elsewhere run the README's install line as pip would, without network or
    dependencies: it must find the wheel just built."""
    build, install = install_paragraph()
    assert build.startswith("pip wheel . ") and install.startswith("pip install ")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    pip = f"{shlex.quote(sys.executable)} -m pip"
    built = subprocess.run(
        ["bash", "-c", build.replace("pip", pip, 1) + " --no-build-isolation -q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    wheels = sorted(home.glob("**/ragassay-*.whl"))
    assert len(wheels) == 1, f"the README's build line wrote {len(wheels)} wheels under $HOME: {build}"
    wheel = wheels[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = tmp_path / "report.json"
    dry = subprocess.run(
        [
            "bash",
            "-c",
            install.replace("pip", pip, 1) + " --dry-run --ignore-installed --no-deps "
            f"--no-index -q --report {shlex.quote(str(report))}",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0, (install, dry.stderr)
    (chosen,) = json.loads(report.read_text())["install"]
    assert chosen["metadata"]["name"] == "ragassay"
    assert chosen["download_info"]["url"] == wheel.as_uri()

"""The site's generated reference: every command's flags from the parser, and the measure catalogue
from the registry, so that neither is written twice.

MkDocs runs this file as a hook (mkdocs.yml: ``hooks``). A page that holds the marker
``<!-- generated: cli -->`` or ``<!-- generated: measures -->`` gets the generated text in its place
when the site is built; tests/test_site.py calls the same functions to check the text, so the page
and the code cannot drift apart.
"""

from __future__ import annotations

import argparse
import html
import re
import typing
from pathlib import Path
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

CLI_MARKER = "<!-- generated: cli -->"
MEASURES_MARKER = "<!-- generated: measures -->"
RECORDS_MARKER = "<!-- generated: records -->"
CHANGELOG_MARKER = "<!-- generated: changelog -->"
API_MARKER = "<!-- generated: api -->"
# the documented calls of the Python API, in the order a reader meets them; where each lives is read from
# ragassay's own table of exports, so a module that moves takes its page entry with it
API_NAMES = (
    "read_qrels",
    "read_run",
    "read_chunks",
    "read_queries",
    "evaluate",
    "compare",
    "agree",
    "run_retriever",
    "generate",
    "judge",
    "check",
    "qualify",
    "write_run",
    "write_qrels",
    "write_jsonl",
    "Qrels",
    "Run",
    "Evaluation",
    "Comparison",
    "Agreement",
    "parse_measure",
    "Measure",
    "LLMConfig",
)
ROOT = Path(__file__).resolve().parents[2]


def _cell(text: str) -> str:
    """A table cell's text: one line, pipes escaped, so that a help text never breaks the table."""
    return " ".join(text.split()).replace("|", "\\|")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flag_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or (
                    action.dest.upper() if not action.choices else "{" + ",".join(map(str, action.choices)) + "}"
                )
                name += f" `{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
        else:
            name = f"`{action.metavar or action.dest}`"
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
        help_text = (action.help or "") % {"default": default, "prog": parser.prog} if action.help else ""
        rows.append(f"| {name} | {_cell(help_text)} | {shown} |")
    return rows


def _command_section(name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    usage = " ".join(parser.format_usage().split())
    usage = usage[len("usage: ") :] if usage.startswith("usage: ") else usage
    out = [f"{'#' * level} `{name}`", "", f"```text\n{usage}\n```", ""]
    if parser.description:
        out += [html.escape(" ".join(parser.description.split()), quote=False), ""]
    out += ["| flag | meaning | default |", "|---|---|---|", *_flag_rows(parser), ""]
    for sub_name, sub in _subcommands(parser).items():
        out += _command_section(f"{name} {sub_name}", sub, level + 1)
    if parser.epilog:
        out += ["```text", parser.epilog.strip("\n"), "```", ""]
    return out


def cli_reference() -> str:
    """Every command of ``ragassay``, in the parser's order: its usage, what it does, each flag with its
    help and default, and its examples (the parser's epilog)."""
    from ragassay.cli import build_parser

    lines: list[str] = []
    for name, parser in _subcommands(build_parser()).items():
        lines += _command_section(f"ragassay {name}", parser, 2)
    return "\n".join(lines)


def _peer(name: str, order: str) -> str:
    """The tool whose value the measure equals, read off the order it ranks ties in and its name."""
    if name in {"dcg", "dcg_burges", "ndcg_burges", "ranx_rbp", "hits"}:
        return "ranx"
    if order == "run_order" or name in {"compat", "judged"}:
        return "ir_measures" + (" (cwl_eval)" if order == "run_order" else "")
    if name == "err":
        return "gdeval (ir_measures' ERR)"
    return "trec_eval"


_TIES = {
    "trec": "document id descending",
    "id_ascending": "document id ascending",
    "run_order": "the run's order",
    "judged_only": "document id descending",
}


def measure_rows() -> list[tuple[str, str, str, str, str, str]]:
    """(name, aliases, parameters, peer, tie order, what it measures) for every measure of the registry."""
    from ragassay.metrics import measure_values, measures
    from ragassay.metrics.measures import registry  # each measure's declarations: spellings, parameters

    aliases: dict[str, list[str]] = {}
    for alias, canonical in registry.ALIASES.items():  # the registry's own table of spellings
        if alias != canonical:
            aliases.setdefault(canonical, []).append(alias)
    examples: dict[str, str] = {}
    for written in measures.measure_names():
        base = re.split(r"[(@]", written)[0]
        examples.setdefault(base, written)
    rows = []
    for name, (cutoff, what) in measures.MEASURES.items():
        written = examples.get(name) or name
        parsed = measures.parse_measure(written.replace("@k", "@10").replace("@r", "@0.5"))
        if name == "judged":
            parsed = measures.parse_measure("judged@10")
        order = measure_values._order_of(parsed)
        params = [{"required": "`@k` (required)", "optional": "`@k`", "none": ""}[cutoff]]
        params += [
            f"`{p}`" + ("" if default is None else f" ({default})") + (" required" if default is None else "")
            for p, (_, default) in registry.PARAMS.get(name, {}).items()
        ]
        params += ["`rel`"] if name in measures.TAKES_REL else []
        params += ["`judged_only`"] if name in measures.TAKES_JUDGED_ONLY else []
        rows.append(
            (
                f"`{written}`",
                ", ".join(f"`{a}`" for a in sorted(aliases.get(name, []))),
                ", ".join(p for p in params if p),
                _peer(name, order),
                _TIES[order],
                what,
            )
        )
    return rows


def measure_catalogue() -> str:
    lines = [
        "| measure | also spelled | parameters | equals | tied scores | what it measures |",
        "|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in measure_rows()]
    return "\n".join(lines)


def _type_name(annotation: object) -> str:
    text = getattr(annotation, "__name__", None) if not typing.get_args(annotation) else None
    return text or str(annotation).replace("typing.", "").replace("ragassay.data.records.", "")


def records_reference() -> str:
    """Every kind of record ragassay writes (the registry ``RECORDS``): what it is, and each field with its
    type and, where the model says one, its default."""
    from ragassay.data.records import RECORDS

    lines: list[str] = []
    for kind, model in RECORDS.items():
        doc = " ".join((model.__doc__ or "").split())
        lines += [f"## `{kind}`", "", html.escape(doc, quote=False), "", "| field | type | default |", "|---|---|---|"]
        for name, field in model.model_fields.items():
            default = "" if field.is_required() else f"`{field.get_default(call_default_factory=True)!r}`"
            lines.append(f"| `{name}` | `{_cell(_type_name(field.annotation))}` | {_cell(default)} |")
        lines.append("")
    return "\n".join(lines)


def changelog() -> str:
    """CHANGELOG.md at the project's root, its own title dropped (the page has one)."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return text.split("\n", 1)[1] if text.startswith("# ") else text


def api_reference() -> str:
    """mkdocstrings directives for every documented call, at the module where it is defined."""
    import ragassay

    lines = []
    for name in API_NAMES:
        lines += [f"::: ragassay.{ragassay._EXPORTS[name]}.{name}", ""]
    return "\n".join(lines)


class DoctestFences(Preprocessor):
    """Puts a docstring's bare ``>>>`` session (the examples that tests/test_docstrings.py runs) in a
    ``pycon`` fence, so that its output lines are shown as code and never read as Markdown links."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fenced = in_session = False
        for line in lines:
            if line.lstrip().startswith(("```", "~~~")) and not in_session:
                fenced = not fenced
            elif not fenced and line.startswith(">>>") and not in_session:
                out.append("```pycon")
                in_session = True
            elif in_session and not line.strip():
                out.append("```")
                in_session = False
            out.append(line)
        if in_session:
            out.append("```")
        return out


class DoctestFenceExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        md.preprocessors.register(DoctestFences(md), "doctest_fences", 40)


def on_config(config: Any, **_: object) -> Any:
    config.markdown_extensions.append(DoctestFenceExtension())
    return config


def on_page_markdown(markdown: str, **_: object) -> str:
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    if RECORDS_MARKER in markdown:
        markdown = markdown.replace(RECORDS_MARKER, records_reference())
    if CHANGELOG_MARKER in markdown:
        markdown = markdown.replace(CHANGELOG_MARKER, changelog())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if MEASURES_MARKER in markdown:
        markdown = markdown.replace(MEASURES_MARKER, measure_catalogue())
    return markdown

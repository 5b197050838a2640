"""What ``ragassay init`` writes: the project file's text for what it found (by hand, with comments and
the choices commented out), or with ``--update`` the files that appeared since appended to it."""

from __future__ import annotations

import datetime
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError, UsageError
from .finding import Findings, Found, scan, unique_name
from .model import DEFAULT_OUT, PROJECT_FILE
from .toml_file import load_toml, loads_toml

_HEADER = """\
# ragassay project file: `ragassay run` runs the pipeline it describes (generate questions when there
# are none, retrieve with each retriever, judge the pool of every run's top `depth`, measure people's
# qrels against a second labelling and the judged pool, check the answers, evaluate and compare every
# run, write the report, track the results, gate). Each step runs only when its inputs changed. Paths
# are relative to this file. `ragassay init --update` appends files that appear later and keeps your
# edits. Written by `ragassay init` on {date}.

out = "{out}"    # where run writes its outputs (state and history: .ragassay/ beside this file)
depth = 10    # the pool: the union of every run's top 10 for each query, judged once for all runs
k = 100    # results a retriever returns for each query
metrics = ["ndcg@10", "map", "recall@10", "mrr"]
# keep_going = true    # a failed LLM step does not stop the steps after it (the report shows what succeeded)
"""

_SECTIONS: dict[str, str] = {
    "data": "# the files the pipeline reads{no_queries}\n"
    "# (qrels: labels of query x chunk; human: labels of the answers; who made each: FILE.origin.json or its "
    "lines)",
    "runs": "# runs made elsewhere (TREC or JSON Lines): name = file",
    "retrievers": "# functions of a query returning chunk ids or (id, score) pairs, best first:\n"
    '# name = "file.py:function"',
    "llm": "# the endpoint for generate, judge and check (flags and OPENAI_* / RAGASSAY_MODEL override these)\n"
    '# model = "gpt-4o-mini"\n# base_url = "http://localhost:8000/v1"\n# concurrency = 8\n'
    "# price_in = 0.15    # USD per million input tokens\n# price_out = 0.6\n"
    "# max_cost = 1.0    # stop before spending more",
    "generate": "# limit = 20    # questions to write when the project has no queries\n"
    "# sample = 10    # questions to write although it has queries (a set to read: not retrieved)",
    "judge": "# coverage = true    # also each run's coverage of each query's nuggets (more calls)\n"
    '# prompt = "auto"    # full, short (small local models), or your prompt file; auto: short when the\n'
    "#                     # model's name says 14B parameters or fewer",
    "check": '# run = "NAME"    # the run whose recall explains the answers (default: the first)\n'
    '# prompt = "auto"    # as [judge] prompt',
    "agree": "# people's qrels against the judged pool, always; and against a second labelling of the same pairs:\n"
    '# second = "FILE"',
    "report": "# title = \"...\"    # the report's title (default: this folder's name)",
    "gate": '# fail the run (exit 1) when a metric of a run crosses a threshold\n# min = ["ndcg@10=0.5"]\n'
    '# max = []\n# run = "NAME"    # only this run (default: every run)',
}


def _quote(s: str) -> str:
    return json.dumps(s)  # a TOML basic string is a JSON string for the characters paths hold


def _entry(f: Found, why: str = "", commented: bool = False) -> str:
    """One line of the file: ``key = "value"    # note; why``, commented out as a choice."""
    key = f.key if re.fullmatch(r"[A-Za-z0-9_-]+", f.key) else _quote(f.key)
    line = f"{key} = {_quote(f.value)}"
    note = "; ".join(n for n in (f.note, why) if n)
    return (f"# {line}" if commented else line) + (f"    # {note}" if note else "")


def render_project(findings: Findings, out: str = DEFAULT_OUT) -> str:
    """The project file's text for ``findings``."""
    text = _HEADER.format(date=datetime.date.today().isoformat(), out=out)
    for table, comment in _SECTIONS.items():
        lines = [_entry(f) for f in findings.placed if f.table == table]
        lines += [_entry(f, why, commented=True) for f, why in findings.ambiguous if f.table == table]
        if table == "data":  # questions are generated only when no file gives them
            has_queries = any(f.key == "queries" for f in findings.placed if f.table == table)
            may_be = [f.path for f, _ in findings.ambiguous if f.table == table and f.key == "queries"]
            comment = comment.format(
                no_queries=""
                if has_queries
                else f"; no queries placed: {' or '.join(may_be)} may hold them (uncomment below)"
                if may_be
                else "; no queries: run generates questions from the chunks"
            )
        if table == "generate" and may_be_queries(findings):  # no questions written while a file may hold them
            lines.insert(
                0,
                f"limit = 0    # no questions are generated while {' or '.join(may_be_queries(findings))} "
                "may hold the queries: name them in [data], or set a limit to generate",
            )
        text += f"\n[{table}]\n{comment}\n" + "".join(line + "\n" for line in lines)
    if findings.unplaced:
        text += "\n# not placed:\n" + "".join(f"#   {name}: {why}\n" for name, why in findings.unplaced)
    return text


def may_be_queries(findings: Findings) -> list[str]:
    """The files that may hold the queries when none is placed as them (written commented out)."""
    if any(f.key == "queries" for f in findings.placed if f.table == "data"):
        return []
    return [f.path for f, _ in findings.ambiguous if f.table == "data" and f.key == "queries"]


def _mentioned(text: str, value: str) -> bool:
    """Whether ``value`` (a file's path, or a retriever's ``file.py:function``) appears anywhere in the
    file's text, in a line commented out or not, quoted either way or bare, after ``./`` or not: a
    file the user named, renamed or set aside by hand is known, and never added again."""
    return re.search(rf"(?<![\w./\\-])(?:\./)?{re.escape(value)}(?![\w./\\-])", text) is not None


def update_text(text: str, findings: Findings) -> tuple[str, Findings]:
    """``text`` with the files it does not name yet appended at the end of their table (a table it
    lacks is added at the end); every line it had is kept as it was. Returns the new text and what
    was added."""
    added = Findings(
        placed=[f for f in findings.placed if not _mentioned(text, f.value)],
        ambiguous=[(f, w) for f, w in findings.ambiguous if not _mentioned(text, f.value)],
        unplaced=[(n, w) for n, w in findings.unplaced if not _mentioned(text, n)],
    )
    current = loads_toml(text)
    stamp = f"added by init --update on {datetime.date.today().isoformat()}"
    lines = text.splitlines()
    for table in _SECTIONS:
        entries = []
        for f in (f for f in added.placed if f.table == table):
            taken = f.key in current.get(table, {})
            if table == "data" and taken:  # the role is filled: the new file is a choice, not a replacement
                entries.append(
                    _entry(f, f"{stamp}; [data] {f.key} is set already: uncomment to use this one", commented=True)
                )
            else:
                f.key = unique_name(f.key, set(current.get(table, {})) | {e.split(" ")[0] for e in entries}, f)
                entries.append(_entry(f, stamp))
        entries += [_entry(f, f"{why}; {stamp}", commented=True) for f, why in added.ambiguous if f.table == table]
        if entries:
            lines = _insert(lines, table, entries)
    if added.unplaced:
        lines += ["", f"# not placed ({stamp}):"] + [f"#   {n}: {w}" for n, w in added.unplaced]
    return "\n".join(lines) + "\n", added


def _insert(lines: list[str], table: str, entries: list[str]) -> list[str]:
    """``entries`` after the last line of ``[table]`` (before the blank lines that end it)."""
    header = next((i for i, line in enumerate(lines) if re.match(rf"^\s*\[{table}\]\s*(#.*)?$", line)), None)
    if header is None:
        return lines + ["", f"[{table}]"] + entries
    end = next((i for i in range(header + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines))
    while end > header + 1 and not lines[end - 1].strip():
        end -= 1
    return lines[:end] + entries + lines[end:]


# ------------------------------------------------------------------------------------ init


def quote_arg(text: str) -> str:
    """A path as a shell would take it back (quoted when it holds a space or a quote)."""
    return shlex.quote(text)


@dataclass
class InitResult:
    """What ``ragassay init`` wrote and found."""

    path: Path
    updated: bool
    findings: Findings

    def to_dict(self) -> dict[str, Any]:
        f = self.findings
        return {
            "kind": "init",
            "version": 1,
            "project": str(self.path),
            "updated": self.updated,
            "placed": [x.to_dict() for x in f.placed],
            "ambiguous": [{**x.to_dict(), "why": why} for x, why in f.ambiguous],
            "unplaced": [{"file": n, "why": why} for n, why in f.unplaced],
        }

    def text(self) -> str:
        f = self.findings
        verb = "updated" if self.updated else "wrote"
        lines = [f"{verb} {self.path}" + (": nothing new" if self.updated and not (f.placed or f.ambiguous) else "")]
        if f.placed:
            lines.append("found:")
            lines += [f"  {x.path:<40} {x.to_dict()['role']}" + (f"  ({x.note})" if x.note else "") for x in f.placed]
        if f.ambiguous:
            lines.append("to choose (written commented out):")
            lines += [f"  {x.path:<40} {x.to_dict()['role']}?  {why}" for x, why in f.ambiguous]
        if f.unplaced:
            lines.append("not placed:")
            lines += [f"  {n:<40} {why}" for n, why in f.unplaced]
        here = Path.cwd().resolve() == self.path.parent.resolve()  # run finds ./ragassay.toml by itself
        named = "" if here and self.path.name == PROJECT_FILE else f" {quote_arg(str(self.path))}"
        lines.append(f"next: read {self.path}, then 'ragassay run{named} --dry-run' to see what it would do and cost")
        return "\n".join(lines)


def init_project(folder: str | Path | None = None, update: bool = False) -> InitResult:
    """``ragassay init [DIR]``: write ``DIR/ragassay.toml`` naming each file's role, or with
    ``update`` append the files that appeared since to the one there."""
    root = Path(folder) if folder else Path(".")
    if not root.is_dir():
        raise InputError("not a folder", root)
    path = root / PROJECT_FILE
    if path.exists() and not update:
        raise UsageError(
            f"{path} exists: 'ragassay init --update' adds the files that appeared since (keeping "
            "your edits); remove it to start again"
        )
    if update and not path.exists():
        raise UsageError(f"{path} does not exist yet: 'ragassay init' (without --update) writes it")
    out = DEFAULT_OUT
    if update:
        raw = load_toml(path)
        out = raw.get("out", DEFAULT_OUT) if isinstance(raw.get("out"), str) else DEFAULT_OUT
    findings = scan(root, skip=[root / out])
    if not update and not findings.placed and not findings.ambiguous:  # a file of comments only helps no one
        said = "".join(f"\n  {name}: {why}" for name, why in findings.unplaced[:10])
        more = len(findings.unplaced) - 10
        raise InputError(
            "found nothing ragassay can use (chunks, queries, answers, qrels, runs or retriever "
            "functions); no project file written"
            + (":" + said if said else ": the folder is empty")
            + (f"\n  ... and {more} more" if more > 0 else ""),
            root,
        )
    if not update:
        path.write_text(render_project(findings, out), encoding="utf-8")
        return InitResult(path, False, findings)
    text, added = update_text(path.read_text(encoding="utf-8"), findings)
    path.write_text(text, encoding="utf-8")
    return InitResult(path, True, added)

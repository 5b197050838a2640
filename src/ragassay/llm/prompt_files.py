"""Which prompt a judge or check run uses: ``full``, ``short``, ``auto`` or a file of the user's.

``full`` is the stage's long rubric (its own answer schema, with steps of reasoning); ``short`` is a
brief prompt written for small local models (1-8B), which follow a long rubric poorly; ``auto`` picks
``short`` only when the model's own name says it has at most ``SMALL_MAX_BILLIONS`` billion
parameters, and ``full`` for every other name (a hosted model's name says nothing of its size, and
nothing is guessed from anything else). A path names the user's own prompt: its placeholders are
checked against the stage's before any call, and it is versioned by its content as the bundled
prompts are (``STEM@sha8``), so an edited file is a new cache key and every record names it.

The lead's call: ``choose_prompt(stage, choice, model) -> (Prompt, reason)``; ``full_schema`` says
whether a chosen prompt is answered in the stage's full schema or in its short one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError, UsageError
from .prompts import Prompt, load_prompt

CHOICES = ("auto", "full", "short")

# the placeholders each stage fills: (required, optional)
PLACEHOLDERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "judge": (("query", "passage"), ("need", "expected")),
    "check": (("question", "response", "reference"), ("passages", "notes")),
}

# the bundled prompt of each stage and choice (in ragassay/prompts/)
BUNDLED: dict[str, dict[str, str]] = {
    "judge": {"full": "judge_relevance", "short": "judge_relevance_short"},
    "check": {"full": "check_answer", "short": "check_answer_short"},
}

# what ``auto`` picks for a model whose name says it is small; the lead may flip an entry to "full"
# after measuring both against people's labels
SMALL_MODEL_PROMPT: dict[str, str] = {"judge": "short", "check": "short"}

SMALL_MAX_BILLIONS = 14.0  # a model of at most this many billion parameters (by its name) is small

# "1.5b", "7B", "8x7B", "360m" standing alone between separators (not "a3b": qwen3-30b-a3b's active
# parameters, not "4bit", not the "2.5" of qwen2.5)
_SIZE = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?![a-z0-9])", re.I)


def model_billions(name: str | None) -> float | None:
    """The parameters a model's name says it has, in billions (``8x7B``: all its experts, 56), or
    None when the name says no size (``gpt-4o-mini``, ``e5-small``). Several sizes: the largest."""
    if not name:
        return None
    sizes = []
    for experts, number, unit in _SIZE.findall(name):
        value = float(number) * (int(experts) if experts else 1)
        sizes.append(value / 1000 if unit.lower() == "m" else value)
    return max(sizes) if sizes else None


def _size_text(billions: float) -> str:
    return f"{billions:g}B"


def choose_prompt(
    stage: str, choice: str = "auto", model: str | Sequence[str | None] | None = None, *, full_only: str | None = None
) -> tuple[Prompt, str]:
    """The prompt a ``stage`` ("judge" or "check") run uses for ``choice`` ("auto", "full",
    "short" or a path to a prompt file) with ``model`` (a name, or a jury's names: ``auto`` picks
    the short prompt only when every name says the model is small), and a one-line reason for
    stderr. ``full_only``: why this run can use the full prompt only (``--batch 4``): ``auto`` then
    picks it, and any other choice is a :class:`~ragassay.errors.UsageError` that says so. A
    prompt file that cannot serve the stage is an :class:`~ragassay.errors.InputError` naming
    the file (and the line, for a placeholder the stage does not fill)."""
    if stage not in BUNDLED:
        raise ValueError(f"no prompts for the stage {stage!r}: one of {', '.join(BUNDLED)}")
    if choice == "full":
        return load_prompt(BUNDLED[stage]["full"]), "full prompt (--prompt full)"
    if full_only is not None:
        if choice == "auto":
            return load_prompt(BUNDLED[stage]["full"]), f"full prompt: {full_only}"
        raise UsageError(
            f"--prompt {choice}: {full_only}, which only the full prompt can do; use --prompt full "
            "(or auto), or drop the option that needs it"
        )
    if choice == "short":
        return load_prompt(BUNDLED[stage]["short"]), "short prompt (--prompt short); --prompt full for the full rubric"
    if choice == "auto":
        return _auto(stage, model)
    prompt = read_prompt_file(choice, stage)
    return prompt, f'prompt file {choice} ({prompt.id}), answered as {{"reasoning", "{_decision(stage)}"}}'


def _decision(stage: str) -> str:
    return "grade" if stage == "judge" else "label"


def _auto(stage: str, model: str | Sequence[str | None] | None) -> tuple[Prompt, str]:
    names = [model] if model is None or isinstance(model, str) else list(model)
    sizes = [(n, model_billions(n)) for n in names]
    unknown = [n for n, b in sizes if b is None]
    large = [(n, b) for n, b in sizes if b is not None and b > SMALL_MAX_BILLIONS]
    full = load_prompt(BUNDLED[stage]["full"])
    if unknown:
        reason = f"the model's name ({unknown[0] or 'none given'}) does not say its size"
        return full, f"full prompt: {reason}; --prompt short for a small local model"
    if large:
        n, b = large[0]
        return full, (
            f"full prompt: the model's name says {_size_text(b)} parameters (more than "
            f"{SMALL_MAX_BILLIONS:g}B); --prompt short for the short one"
        )
    biggest = max(b for _, b in sizes if b is not None)
    pick = SMALL_MODEL_PROMPT.get(stage, "full")
    jury = " (every juror's)" if len(sizes) > 1 else ""
    if pick == "short":
        return load_prompt(BUNDLED[stage]["short"]), (
            f"short prompt: the model's name{jury} says {_size_text(biggest)} parameters; --prompt full for the "
            "full rubric"
        )
    return load_prompt(BUNDLED[stage][pick]), (
        f"{pick} prompt: the model's name{jury} says {_size_text(biggest)} parameters, and {pick} is what auto "
        "picks for small models; --prompt short for the short one"
    )


def full_schema(stage: str, prompt: Prompt) -> bool:
    """Whether ``prompt`` is the stage's bundled full prompt (answered in the full schema, with its
    steps of reasoning); every other prompt, short or the user's, is answered in the short schema."""
    return prompt == load_prompt(BUNDLED[stage]["full"])


_LOOSE = re.compile(r"\{\{[^{}\n]{0,60}\}\}")  # anything written as {{...}}: a placeholder or a mistake
_ROLE_LIKE = re.compile(r"^\s*\[\s*(system|user|assistant|developer)\s*\]\s*$", re.I)


def read_prompt_file(path: str | Path, stage: str) -> Prompt:
    """A user's prompt file as a :class:`Prompt` named by the file's stem, checked against the
    stage's placeholders (see ``PLACEHOLDERS``): an unknown ``{{name}}`` is an error naming its
    line; a required one missing is an error listing what is missing and what is allowed. The
    file is read as UTF-8 (a byte-order mark dropped, Windows line ends made ``\\n``, so the
    ``[system]``/``[user]`` sections are read as written)."""
    p = Path(path)
    required, optional = PLACEHOLDERS[stage]
    allowed = ", ".join("{{" + n + "}}" for n in (*required, *optional))
    text = _prompt_text(p)
    if not text.strip():
        raise InputError(f"the prompt file is empty: write the {stage} prompt with its placeholders ({allowed})", p)
    names = set(required) | set(optional)
    for no, line in enumerate(text.split("\n"), start=1):
        _check_section_line(line, p, no)
        _check_placeholders(line, p, no, stage, names, allowed)
    _check_text_before_sections(text, p)
    prompt = Prompt(p.stem or p.name, text)
    missing = [n for n in required if n not in prompt.placeholders]
    if missing:
        raise InputError(
            f"the prompt file lacks {', '.join('{{' + n + '}}' for n in missing)}, which the {stage} "
            f"stage needs (required: {', '.join(required)}; allowed: {allowed})",
            p,
        )
    return prompt


def _prompt_text(p: Path) -> str:
    """The prompt file's text, decoded as UTF-8 with a byte-order mark dropped and every line end
    made ``\\n``; a folder, a missing or unreadable file, or bytes that are not UTF-8 are an error
    naming the file (and, for bad bytes, their line)."""
    if p.is_dir():
        raise InputError(f"a folder, not a prompt file: give a prompt file's path, or one of {', '.join(CHOICES)}", p)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(
            f"no such prompt file (a prompt is one of {', '.join(CHOICES)}, or a prompt file's path)", p
        ) from None
    except OSError as e:
        raise InputError(f"the prompt file cannot be read ({e.strerror or e})", p) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        bad_line = data[: e.start].count(b"\n") + 1
        raise InputError(f"the prompt file is not UTF-8 text (byte {e.start}); save it as UTF-8", p, bad_line) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_section_line(line: str, p: Path, no: int) -> None:
    """A line that looks like a section header must be ``[system]`` or ``[user]`` exactly, alone on
    its line: any other spelling would be sent to the model as text of the section before it."""
    role = _ROLE_LIKE.match(line)
    word = role.group(1).lower() if role else ""
    if role and (line != f"[{word}]" or word not in ("system", "user")):
        fix = (
            f"write it as [{word}] alone on its line"
            if word in ("system", "user")
            else "the sections a prompt file has are [system] and [user]"
        )
        raise InputError(f"{line.strip()!r} is not a section this prompt file can have: {fix}", p, no)


def _check_placeholders(line: str, p: Path, no: int, stage: str, names: set[str], allowed: str) -> None:
    """Every ``{{...}}`` on a line must be a placeholder the stage fills, written with no spaces:
    anything else would reach the model as written, unfilled."""
    required = PLACEHOLDERS[stage][0]
    for m in _LOOSE.finditer(line):
        inner = m.group()[2:-2]
        if not re.fullmatch(r"\w+", inner):
            raise InputError(
                f"{m.group()} is not a placeholder as written: write {{{{name}}}} with no spaces, one of {allowed}",
                p,
                no,
            )
        if inner not in names:
            raise InputError(
                f"{{{{{inner}}}}} is not a placeholder the {stage} stage fills: the allowed ones are "
                f"{allowed} (required: {', '.join(required)})",
                p,
                no,
            )


def _check_text_before_sections(text: str, p: Path) -> None:
    """Text before the first section line would be left out of every message: an error naming the
    first line written."""
    first = re.search(r"^\[(system|user)\]\n", text, re.M)
    if first is not None and text[: first.start()].strip():
        before = text[: first.start()]
        first_line = before[: len(before) - len(before.lstrip())].count("\n") + 1  # the first line written
        raise InputError(
            f"text before the first [{first.group(1)}] line belongs to no message: move it into a "
            "section (or start the file with [system] or [user])",
            p,
            first_line,
        )

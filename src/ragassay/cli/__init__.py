"""The ``ragassay`` command: parse arguments, call the library, print. No logic of its own.

Flags mean the same in every command: ``-m/--metric``, ``--format``, ``--relevance-level``,
``--missing``, ``--gain``, ``--dedupe``, ``--run-format``/``--qrels-format``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from .. import __version__
from ..errors import MeasureError, RagassayError, UsageError
from .paths import check_outputs, lock_outputs, make_output_folders

if TYPE_CHECKING:  # asyncio is imported only by the commands that run a loop
    import asyncio


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit 2 with usage, as argparse does, and a did-you-mean
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}{self._suggestion(message)}\n(see '{self.prog} --help')\n")

    def _suggestion(self, message: str) -> str:
        """'did you mean' for a misspelt command or flag (flags of every command: argparse reports
        unknown flags from the top parser, after the command's own parser has passed them on)."""
        import difflib
        import re

        m = re.search(r"invalid choice: '([^']+)'", message)
        if m:
            choices = [c for a in self._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices]
            close = difflib.get_close_matches(m.group(1), choices, n=1)
            return f"; did you mean {close[0]!r}?" if close else ""
        m = re.search(r"unrecognized arguments: (\S+)", message)
        if m and m.group(1).startswith("-") and "did you mean" not in message and "is a flag of" not in message:
            parsers = [self] + [
                p for a in self._actions if isinstance(a, argparse._SubParsersAction) for p in a.choices.values()
            ]
            flags = sorted({o for p in parsers for a in p._actions for o in a.option_strings})
            close = difflib.get_close_matches(m.group(1).split("=")[0], flags, n=1)
            return f"; did you mean {close[0]}?" if close else ""
        return ""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``command`` (a command's name) the top parser with that one
    command: a run parses its own command's flags only, so it does not declare the other 19 commands'
    300 flags first (about 10 ms a run). The one command's parser is the same as in the whole one."""
    parser = _Parser(
        prog="ragassay",
        description="Build and grade ground truth for retrieval and RAG: metrics exact to trec_eval, "
        "significance tests, judge agreement.",
    )
    parser.add_argument("--version", action="version", version=f"ragassay {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    registers = _registers()
    known = command in {name for name, _ in registers}
    for name, register in registers:
        if not known or name == command:
            register(sub)
    for each in sub.choices.values():
        _shared_flags(each)
    return parser


def _registers() -> tuple[tuple[str, Callable[[Any], None]], ...]:
    """Each command's name and the function that declares it, in the order ``--help`` lists them."""
    # each area's commands, declared in one module per area; a command's handler module is imported
    # only when that command runs (cli/handlers.py), so that --help imports none of the library
    from . import (
        declare_label,
        declare_llm_stages,
        declare_metrics,
        declare_product,
        declare_qualify,
        declare_set_quality,
    )

    return (
        ("demo", declare_product.demo),
        ("evaluate", declare_metrics.evaluate),
        ("compare", declare_metrics.compare),
        ("agree", declare_metrics.agree),
        ("retrieve", declare_metrics.retrieve),
        ("generate", declare_llm_stages.generate),
        ("quality", declare_set_quality.quality),
        ("remap", declare_llm_stages.remap),
        ("judge", declare_llm_stages.judge),
        ("check", declare_llm_stages.check),
        ("label", declare_label.label),
        ("merge", declare_product.merge),
        ("report", declare_product.report),
        ("track", declare_product.track),
        ("history", declare_product.history),
        ("gate", declare_product.gate),
        ("ping", declare_llm_stages.ping),
        ("qualify", declare_qualify.qualify),
        ("init", declare_product.init),
        ("run", declare_product.run),
    )


_EXAMPLE_FILES = (
    "(the example's files: 'ragassay demo --copy datasets/example' writes them into any directory; "
    "a clone has them already)"
)


def _shared_flags(p: argparse.ArgumentParser) -> None:
    """What every command takes, whatever its area: --quiet, and a note on where the help's example
    files come from (they exist in a clone; outside one, `demo --copy` writes them)."""
    if not any("--quiet" in a.option_strings for a in p._actions):
        p.add_argument(
            "--quiet",
            action="store_true",
            help="no progress on stderr (this command shows none: taken so that every command accepts the same flags)",
        )
    if p.epilog and "datasets/example/" in p.epilog:
        p.epilog += " " + _EXAMPLE_FILES


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Exit codes (a contract users script against; README.md lists them): 0 every
    item ok; 3 some items are error records (a rerun retries them); 1 nothing succeeded, bad input,
    or a run stopped early; 2 usage error; 130 stopped by Ctrl-C and 143 by SIGTERM, with one line
    said and what was done kept. Handlers return the text to print, or (text, exit code).

    SIGTERM is taken over first of all (:class:`SigtermWatch`), before the parser imports the commands'
    declarations and the command its handler's modules: from then on, a SIGTERM at any moment ends
    the same way."""
    with SigtermWatch() as watch:
        try:
            code = _run(argv)
            return _stopped(143) if watch.dropped else code
        except _Terminated:
            return _stopped(143)
        except KeyboardInterrupt:
            _quiet_unawaited()
            return _stopped(130)
        except BaseException as e:
            if not watch.ends_as_sigterm(e):
                raise
            return _stopped(143)


def _stopped(code: int) -> int:
    """The one line a stopped command says (130: Ctrl-C, 143: SIGTERM), and its exit code."""
    said = "terminated (SIGTERM)" if code == 143 else "interrupted"
    print(f"{said}; a rerun of the same command resumes where this one stopped", file=sys.stderr)
    return code


def _run(argv: Sequence[str] | None) -> int:
    """:func:`main` without the signals: parse, check the outputs, run the handler, print."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)  # the command named first: its parser alone
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:  # said by the command itself, in its own words: "ragassay demo: error: ..."
            every = build_parser()  # which other commands take the flag: all of them declared
            _subparser(every, args.command).error(_unrecognized(every, args.command, extras))
    except SystemExit as e:  # --help (0) or a usage error (2, already printed): a code, not an exception
        return e.code if isinstance(e.code, int) else 2
    command_parser = _subparser(parser, args.command)
    try:
        with ExitStack() as locks:
            outputs = check_outputs(command_parser, args, args.command)
            if not getattr(args, "dry_run", False):
                make_output_folders(outputs)
                lock_outputs(outputs, locks)
            out = args.handler(args)
    except (UsageError, MeasureError) as e:
        from .hints import own_hints  # the lazy boundary: --help imports no more than it needs

        print(
            f"ragassay {args.command}: error: {own_hints(e, command_parser)}\n(see 'ragassay {args.command} --help')",
            file=sys.stderr,
        )
        return 2
    except RagassayError as e:
        from .hints import own_hints

        print(f"ragassay {args.command}: error: {own_hints(e, command_parser)}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `ragassay evaluate ... | head`
        return 0
    except OSError as e:  # a write that no stage wrapped: still one line naming the file
        where = f"{e.filename}: " if e.filename else ""
        print(f"ragassay {args.command}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    text, code = out if isinstance(out, tuple) else (out, 0)
    if text:
        try:
            print(text)
        except BrokenPipeError:
            return code
    return code


def _unrecognized(parser: argparse.ArgumentParser, command: str, extras: list[str]) -> str:
    """What the command does not take, and the nearest flag it does take, or which commands take it."""
    import difflib

    flag = extras[0].split("=")[0]
    message = f"unrecognized arguments: {' '.join(extras)}"
    if not flag.startswith("-"):
        return message
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    others = sorted(
        name for name, p in sub.choices.items() if name != command and any(flag in a.option_strings for a in p._actions)
    )
    if others:  # a real flag, of other commands: say so rather than guess a look-alike
        return f"{message}; {flag} is a flag of {', '.join(others)}, not of {command}"
    mine = sorted({o for a in sub.choices[command]._actions for o in a.option_strings})
    close = difflib.get_close_matches(flag, mine, n=1, cutoff=0.75)
    return f"{message}; did you mean {close[0]}?" if close else message


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it ends like Ctrl-C: journal kept, one line said.
    Code that ends a stop its own way (``ragassay label``) reads the exit code it carries."""

    exit_code = 143


class SigtermWatch:
    """What a running command and its SIGTERM handler tell each other, from the moment :func:`main`
    takes SIGTERM over to the moment it gives it back (``with SigtermWatch() as watch``). The handler
    is a plain function of the module (:func:`_raise_terminated`), so it finds the watch in force as
    ``SigtermWatch.active``; a watch entered inside another gives the outer one back when it ends."""

    active: ClassVar[SigtermWatch | None] = None

    def __init__(self) -> None:
        self.dropped = False  # a SIGTERM raised where Python dropped the exception
        self.resends: list[threading.Timer] = []  # the timers that send a dropped SIGTERM again
        self.ending = False  # main() is giving the handlers back: a late SIGTERM changes nothing
        self.terminating = False  # SIGTERM came while an event loop ran: its tasks were cancelled
        self.raised = False  # SIGTERM raised _Terminated: whatever exception ends the command now ends it so
        self.previous_handler: Any = None  # the SIGTERM handler found, given back (None: not the main thread)
        self.previous_hook: Callable[[sys.UnraisableHookArgs], Any] = sys.unraisablehook
        self.outer: SigtermWatch | None = None

    def __enter__(self) -> SigtermWatch:
        """SIGTERM taken over first of all (nothing but ``signal`` imported on the way: the sooner it
        is in place, the fewer moments of a start a SIGTERM can kill outright), then the hook that
        catches a SIGTERM Python dropped."""
        self.outer, SigtermWatch.active = SigtermWatch.active, self
        self.previous_handler = _take_sigterm()
        self.previous_hook = sys.unraisablehook
        sys.unraisablehook = self.unraisable
        return self

    def __exit__(self, *exc: object) -> None:
        self.ending = True
        for again in self.resends:  # cancelled, or fired: then its signal is handled while ending holds
            again.cancel()
            again.join()
        sys.unraisablehook = self.previous_hook
        if self.previous_handler is not None:
            signal.signal(signal.SIGTERM, self.previous_handler)
        SigtermWatch.active = self.outer

    def ends_as_sigterm(self, e: BaseException) -> bool:
        """Whether ``e``, ending the command, is the SIGTERM's doing: the cancellation of a loop's
        tasks it asked for, or any exception once it raised (see :meth:`on_sigterm`)."""
        return (self.terminating and _cancelled(e)) or self.raised

    def on_sigterm(self) -> None:
        """Inside a running event loop, raising here would tear a task apart mid-step (asyncio then
        prints "Exception ignored" tracebacks): its tasks are cancelled instead, so journals close in
        order, and :func:`main` ends the command as for Ctrl-C. Elsewhere it raises at once."""
        # (asyncio as far as it is imported: a SIGTERM that comes while it is being imported finds it
        # half made, and no loop can be running yet)
        running = getattr(sys.modules.get("asyncio"), "get_running_loop", None)
        try:
            loop = running() if running is not None else None
        except RuntimeError:
            loop = None
        if self.ending:
            return
        _quiet_unawaited()
        if loop is None or self.terminating:  # no loop, or a second SIGTERM: end now
            # raised inside C code that does not expect it (the import system building an ImportError
            # that ssl catches), _Terminated can come out as another exception ("TypeError: expected a
            # message argument"): main() ends any exception after this one as a SIGTERM
            self.raised = True
            raise _Terminated()
        self.terminating = True
        loop.call_soon_threadsafe(_cancel_every_task, loop)

    def unraisable(self, unraisable: sys.UnraisableHookArgs) -> None:
        """A signal handler runs wherever the interpreter is, and that can be a place whose exceptions
        Python only reports and drops (a weakref callback freeing an import lock, a ``__del__``): the
        command would then go on and exit 0. Such a dropped SIGTERM is said nowhere and sent again from
        another thread, so that the handler runs once more in ordinary code (:func:`main` also ends
        with 143 if the command finishes first); anything else goes to the hook main() found."""
        if isinstance(getattr(unraisable, "exc_value", None), _Terminated):
            self.dropped = True
            self.send_again()
            return
        self.previous_hook(unraisable)

    def send_again(self) -> None:
        """SIGTERM sent to this process once more, from a timer thread, in a hundredth of a second."""
        again = threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGTERM))
        again.daemon = True
        self.resends.append(again)
        again.start()


def _raise_terminated(signum: int, frame: object) -> None:
    """The SIGTERM handler while a command runs: what the watch in force does with it (outside any
    command, with no watch, it raises :class:`_Terminated` at once)."""
    (SigtermWatch.active or SigtermWatch()).on_sigterm()


def _take_sigterm() -> Any:
    """Turn SIGTERM into :class:`_Terminated` while a command runs (main thread only), returning the
    handler it replaces."""
    try:
        return signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread (a notebook's worker, a test's thread): signals are not ours
        return None


def _quiet_unawaited() -> None:
    """A stopped run's cancelled tasks can leave a library's coroutine made and never awaited
    (anyio's connection attempts, cancelled between being made and being awaited): Python would warn
    of it as it is collected, after the one line a stop says. Nothing of ours is lost by it."""
    import warnings

    warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)


def _cancelled(e: BaseException) -> bool:
    """Whether ``e`` is asyncio's cancellation (asyncio is imported only by commands that run a loop)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(e, asyncio.CancelledError)


def _cancel_every_task(loop: asyncio.AbstractEventLoop) -> None:
    import asyncio

    for task in asyncio.all_tasks(loop):
        task.cancel()


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)


__all__ = ["main", "build_parser"]

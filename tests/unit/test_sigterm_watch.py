"""The SIGTERM state of a running command is one object, ``cli.SigtermWatch``, entered by ``main()``:
it takes SIGTERM and the unraisable hook over, and gives both back as it found them, an inner watch
giving the outer one back."""

from __future__ import annotations

import signal
import sys

import pytest

from ragassay import cli


def test_a_watch_gives_back_what_it_took_and_an_inner_one_the_outer():
    handler, hook = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    with cli.SigtermWatch() as outer:
        assert signal.getsignal(signal.SIGTERM) is cli._raise_terminated and cli.SigtermWatch.active is outer
        with cli.SigtermWatch() as inner:
            assert cli.SigtermWatch.active is inner and sys.unraisablehook == inner.unraisable
        assert cli.SigtermWatch.active is outer and sys.unraisablehook == outer.unraisable
        assert signal.getsignal(signal.SIGTERM) is cli._raise_terminated
    assert cli.SigtermWatch.active is None
    assert signal.getsignal(signal.SIGTERM) is handler and sys.unraisablehook is hook


def test_outside_a_loop_sigterm_raises_and_is_remembered_and_while_ending_changes_nothing():
    with cli.SigtermWatch() as watch:
        with pytest.raises(cli._Terminated):
            cli._raise_terminated(signal.SIGTERM, None)
        assert watch.raised and watch.ends_as_sigterm(TypeError("expected a message argument"))
        watch.ending = True
        cli._raise_terminated(signal.SIGTERM, None)  # given back already: said nowhere
    fresh = cli.SigtermWatch()
    assert not fresh.ends_as_sigterm(TypeError("a defect")) and not fresh.dropped

"""What every test shares: ``async def`` tests run with asyncio.run (a few lines instead of another
plugin dependency), a private cache folder, the markers set by file (MARKS), the CLI runner fixture and
the wheel built once.

The tests live in folders by kind: ``unit/`` (one process, no server: functions and in-process commands),
``integration/`` (the fake model's local server, child processes, the browser, the built wheel) and
``documents/`` (what the README, the docstrings, the docs' tables and the house rules promise)."""

from __future__ import annotations

import asyncio
import inspect


def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
        return True
    return None


import pytest  # noqa: E402


def pytest_configure(config):
    """Clients use httpx, the transport respx intercepts, for the whole session (set here, not with
    monkeypatch, so that a test's ``monkeypatch.undo()`` keeps it); a test served by the fake model
    (tests/fake_llm.py) runs on the default transport, aiohttp, which FakeLLM switches on while it
    serves."""
    import os
    os.environ["RAGASSAY_HTTP"] = "httpx"


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """No test writes to the user's real cache (~/.cache/ragassay); and each test starts on httpx,
    whatever an earlier one left (see pytest_configure)."""
    import os
    os.environ["RAGASSAY_HTTP"] = "httpx"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(params=["numpy", "arrow"])
def parser(request, monkeypatch):
    """Run a test with each reader of TREC/TSV files: the numpy splitter and pyarrow's parser."""
    if request.param == "arrow":
        pytest.importorskip("pyarrow")
    monkeypatch.setenv("RAGASSAY_PARSER", request.param)
    from ragassay.data.column_reading import reader_path
    assert reader_path() == request.param
    return request.param


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory):
    """The wheel of this checkout, built once per session with no network (--no-deps,
    --no-build-isolation: setuptools comes from the test extras)."""
    import subprocess
    import sys
    from pathlib import Path
    import shutil
    root = Path(__file__).resolve().parents[1]
    wheels = tmp_path_factory.mktemp("wheels")
    # built from a copy without build/: setuptools reuses build/lib, so a module deleted or moved since the
    # last build (runtime/engine.py became a package) would ship beside its replacement
    source = tmp_path_factory.mktemp("source") / "ragassay"
    shutil.copytree(root, source, ignore=shutil.ignore_patterns(
        "build", "dist", ".venv*", "*.egg-info", "__pycache__", ".git", ".mypy_cache", ".ruff_cache", ".pytest_cache",
        ".hypothesis", ".import_linter_cache", "ragassay-demo", ".ragassay", "out"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(source)], check=True, capture_output=True, text=True)
    (wheel,) = wheels.glob("ragassay-*.whl")
    return wheel


# Markers by test file (the module's name): a file is listed when any of its tests needs what the marker
# names, so `-m "not subprocess"` may leave out a few tests that would have run without one. A test
# that uses the built wheel is also marked slow and subprocess wherever it is (see below).
MARKS = {
    "browser": {"test_label", "test_report", "test_report_labels"},
    "peers": {"test_benchmarks", "test_blockwise", "test_chain_real_text", "test_measures_peers", "test_report_labels",
              "test_rests_on", "test_set_quality", "test_formats_like_peers", "test_measure_names_peers",
              "test_measure_params_downstream", "test_metrics_vs_trec_eval", "test_peer_files",
              "test_qrels_as_run_pairs", "test_queries_asked"},
    "subprocess": {"test_package", "test_readme_chain", "test_readme_commands", "test_benchmarks", "test_blockwise",
                   "test_chain_real_text", "test_cli", "test_composed", "test_declared_args", "test_engine",
                   "test_exports_keep", "test_exports_load", "test_generate_engine", "test_label",
                   "test_lazy_imports", "test_measures_peers", "test_overhead", "test_people_samples", "test_product",
                   "test_replies", "test_report", "test_report_labels", "test_retriever_fallback",
                   "test_stages_end_to_end", "test_words", "test_words_match"},
    "slow": set(),
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group marks (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    """Mark each test by its file (MARKS); the tests of the built wheel also go to one xdist worker
    together, so that the wheel is built once in a run, not once per worker."""
    for item in items:
        module = item.path.stem
        for mark, modules in MARKS.items():
            if module in modules:
                item.add_marker(mark)
        if "built_wheel" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.subprocess)
            item.add_marker(pytest.mark.xdist_group("wheel"))


@pytest.fixture
def cli():
    """The one CLI runner: ``cli("evaluate", qrels, run, "--format", "json")`` runs the command in this
    process and returns its exit code and both streams (helpers.Said); ``env=`` sets variables for
    that command only. Module-level helpers import helpers.cli directly."""
    from helpers import cli as run_cli
    return run_cli

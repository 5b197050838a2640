"""Run ``async def`` tests with asyncio.run (a few lines instead of another plugin dependency)."""

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

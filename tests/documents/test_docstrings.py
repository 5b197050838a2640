"""Every `>>>` example in the package's docstrings runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import ragassay


def test_docstring_examples_run():
    attempted = failed = 0
    for info in pkgutil.walk_packages(ragassay.__path__, "ragassay."):
        if info.name.startswith("ragassay.example"):
            continue  # the bundled example's scripts need bm25s
        module = importlib.import_module(info.name)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        failed += result.failed
    assert attempted >= 4  # the examples exist: a test over none would pass vacuously
    assert failed == 0

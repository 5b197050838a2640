"""What the sdist and the wheel hold: every module, prompt and example file of the package, the
`ragassay` script, the dependencies as pinned, and nothing of the clone's (tests, caches)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile

from helpers import ROOT

PACKAGE = ROOT / "src" / "ragassay"


def package_files() -> set[str]:
    """Every file the package is made of, as the wheel names them (ragassay/...)."""
    return {
        p.relative_to(ROOT / "src").as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_wheel_holds_the_package_and_nothing_else(built_wheel):
    names = set(zipfile.ZipFile(built_wheel).namelist())
    info = {n for n in names if ".dist-info/" in n}
    assert names - info == package_files()
    for must in (
        "ragassay/py.typed",
        "ragassay/prompts/judge_relevance.txt",
        "ragassay/example/runs/bm25.txt",
        "ragassay/example/retrievers.py",
        "ragassay/cli/__init__.py",
    ):
        assert must in names, must
    dist = built_wheel.name.split("-")[0] + "-" + built_wheel.name.split("-")[1] + ".dist-info/"
    with zipfile.ZipFile(built_wheel) as z:
        entry = z.read(dist + "entry_points.txt").decode()
        meta = z.read(dist + "METADATA").decode()
    assert "ragassay = ragassay.cli:main" in entry
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    assert any("openai" in r and "<3" in r and ">=2" in r for r in requires), requires
    extras = {line.split(": ")[1] for line in meta.splitlines() if line.startswith("Provides-Extra:")}
    assert {"test", "example", "notebook", "fast", "tokens", "bench"} <= extras


def test_the_sdist_builds_the_same_wheel(tmp_path):
    out = tmp_path / "sdist"
    out.mkdir()
    built = subprocess.run(
        [sys.executable, "-c", "import sys, setuptools.build_meta as b; print(b.build_sdist(sys.argv[1]))", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    sdist = out / built.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
        tar.extractall(tmp_path / "unpacked", filter="data")
    assert {"pyproject.toml", "README.md"} <= members
    assert {"src/" + f for f in package_files()} <= members
    assert not {m for m in members if "__pycache__" in m or m.endswith(".pyc")}
    (src,) = (tmp_path / "unpacked").iterdir()
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = wheels.glob("ragassay-*.whl")
    names = {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}
    assert names == package_files()

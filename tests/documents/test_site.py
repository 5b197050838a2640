"""The documentation site: `mkdocs build --strict` builds it offline, every page is in the navigation, the
generated reference says what the parser and the registry say, and a real browser (headless Chromium,
Debian's `chromium`, as the label page's tests use it) opens the built site: the home page, a reference
page reached through the navigation, and the search box finding "ndcg". RAGASSAY_SCREENSHOTS=DIR keeps
the pictures."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fake_llm import SERVE_POLL
from helpers import ROOT, nonempty
from ragassay.cli import build_parser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
IN_CI = os.environ.get("CI", "").lower() == "true"
BROWSER_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def missing(what: str, how: str) -> None:
    """Under CI a missing tool fails the test (.ci/run installs them); elsewhere it skips it."""
    if IN_CI:
        pytest.fail(f"{what} is missing: {how}")
    pytest.skip(f"{what} is not installed: {how}")


def hooks():
    """docs/_hooks/reference.py, the module that generates the reference pages."""
    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "docs" / "_hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        missing("mkdocs", "pip install -e '.[docs]' (the test extra holds it too)")
    out = tmp_path_factory.mktemp("site")
    # no network: a proxy that refuses every connection, so that a build that fetched anything would fail
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
    }
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    return out


def test_the_site_builds_strictly_and_fetches_nothing_when_read(site):
    pages = nonempty(site.rglob("*.html"))
    for page in nonempty(pages):
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, page
        external = re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"(https?://[^\"]+)\"", text)
        assert not [u for u in external if not u.startswith("https://github.com")], (page, external)
    assert (site / "search" / "search_index.json").is_file()


def nav_pages() -> list[str]:
    import yaml

    class Loader(yaml.SafeLoader):  # mkdocs.yml may hold !!python tags of plugins: read them as text
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"]

    def walk(items) -> list[str]:
        out = []
        for item in items:
            for value in item.values():
                out += walk(value) if isinstance(value, list) else [value]
        return out

    return walk(nav)


def test_every_page_is_in_the_navigation_once():
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
    listed = nav_pages()
    assert len(listed) == len(set(listed))
    assert sorted(listed) == pages


def test_the_home_page_is_two_clicks_from_a_local_model_and_a_ranx_file():
    """A new user finds how to judge with a local model and how to read a ranx file from the home page:
    it links to both guides, and the guides say it."""
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "(how-to/local-model.md)" in home and "(how-to/peer-files.md)" in home
    assert "ranx" in home.split("(how-to/peer-files.md)")[0].rsplit("\n", 1)[-1]
    assert "ranx 0.3" in (ROOT / "docs" / "how-to" / "peer-files.md").read_text(encoding="utf-8")
    assert "--base-url" in (ROOT / "docs" / "how-to" / "local-model.md").read_text(encoding="utf-8")


def test_the_readme_links_to_every_part_of_the_site():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([^)#]+)\)", readme))
    for part in ("get-started.md", "concepts/", "how-to/", "reference/"):
        assert any(link.startswith(part) for link in linked), part
    for link in nonempty(linked):
        assert (ROOT / "docs" / link).is_file(), link
    assert len(readme.splitlines()) <= 170


def test_the_cli_reference_is_the_parser(site):
    page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in nonempty(commands.items()):
        assert f"ragassay {name}</code>" in page, name
        flags = [flag for action in command._actions for flag in action.option_strings]  # --help at least
        for flag in nonempty(flags):
            assert f"<code>{flag}</code>" in page or f"<code>{flag} " in page, (name, flag)


def test_the_measure_catalogue_lists_the_registry(site):
    from ragassay.metrics.measures import MEASURES

    rows = hooks().measure_rows()
    assert len(rows) == len(MEASURES)
    page = (site / "reference" / "measures" / "index.html").read_text(encoding="utf-8")
    for written, *_ in nonempty(rows):
        assert written.strip("`").replace("&", "&amp;") in page, written
    ties = {name.strip("`"): tie for name, _, _, _, tie, _ in rows}
    assert ties["judged"] == "document id ascending" and ties["ndcg"] == "document id descending"
    assert ties["rbp(p=0.8)"] == "the run's order"


def test_the_records_and_the_api_pages_are_generated(site):
    from ragassay.data.records import RECORDS

    records = (site / "reference" / "records" / "index.html").read_text(encoding="utf-8")
    for kind in nonempty(RECORDS):
        assert f"<code>{kind}</code>" in records, kind
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in nonempty(hooks().API_NAMES):
        assert 'id="ragassay.' in api and re.search(rf'id="ragassay\.[\w.]+\.{name}"', api), name


# -------------------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def served(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SERVE_POLL}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(served):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright", "the [test] extra installs it")
    if CHROMIUM is None:
        missing("chromium", ".ci/run installs it with apt (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
        yield b
        b.close()


def heading(page) -> str:
    """The page's title, without the permalink sign its heading ends with."""
    return page.locator("article h1").first.inner_text().strip().rstrip("¶").strip()


def keep(page, name: str) -> None:
    where = os.environ.get("RAGASSAY_SCREENSHOTS")
    shot = page.screenshot(full_page=False)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    if where:
        Path(where, name).write_bytes(shot)


def test_a_browser_opens_the_home_page_navigates_and_searches(browser, served):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    offsite: list[str] = []
    page.on(
        "request",
        lambda r: offsite.append(r.url) if not r.url.startswith(served) and not r.url.startswith("data:") else None,
    )
    page.goto(served, wait_until="networkidle")
    assert page.title().startswith("ragassay")
    assert heading(page) == "ragassay"
    keep(page, "site-home.png")

    # the navigation: Reference, then the measure catalogue
    page.locator("nav.md-nav--primary a", has_text="Measures").first.click()
    page.wait_for_url(re.compile(r".*/reference/measures/$"))
    assert heading(page) == "Measures"
    assert page.locator("table td code", has_text="ndcg_burges@k").count() >= 1
    keep(page, "site-measures.png")

    # the search box, offline (its index is the site's own search_index.json)
    box = page.locator("input.md-search__input")
    box.click()  # the header's search box (on a wide screen it is shown; the magnifier opens it on a narrow one)
    box.press_sequentially("ndcg", delay=50)  # typed as a user types, so the search runs on each key
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=20_000)
    assert results.count() >= 1
    assert "ndcg" in page.locator(".md-search-result").inner_text().lower()
    keep(page, "site-search-ndcg.png")
    page.locator(".md-search-result__item a").first.click()
    page.wait_for_load_state("networkidle")
    assert "ndcg" in page.content().lower()
    assert offsite == [], offsite
    page.close()


def test_a_browser_opens_the_cli_reference_and_a_how_to(browser, served):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(served + "reference/cli/", wait_until="networkidle")
    assert page.locator("h2", has_text="ragassay evaluate").count() == 1
    keep(page, "site-cli.png")
    page.goto(served, wait_until="networkidle")
    page.locator("article a", has_text="Judge with a local model").first.click()
    page.wait_for_url(re.compile(r".*/how-to/local-model/$"))
    assert "llama" in page.locator("article").inner_text().lower()
    keep(page, "site-local-model.png")
    page.close()


def test_the_home_page_counts_the_measures_of_the_registry():
    from ragassay.metrics.measures import MEASURES

    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert f"the catalogue's {len(MEASURES)} measures" in home

"""`ragassay label`: the sample, the labels on disk, the agreement, the server's safety, and the page
itself driven by headless Chromium with the keyboard (Debian's `chromium`; `.ci/run` installs it, and
under CI=true a missing browser fails these tests instead of skipping them)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import ragassay
from fake_llm import FakeLLM
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.errors import InputError, UsageError
from ragassay.product.labeling import (
    LabelBook,
    LabelItem,
    agreement,
    draw_sample,
    pair_items,
    pair_relevant,
    read_other_labels,
)
from ragassay.stages.queries import read_query_items

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, Path]:
    """judge's records and qrels for the example's bm25 top 5, by the fake model."""
    d = tmp_path_factory.mktemp("judged")
    with FakeLLM() as server:
        assert (
            main(
                [
                    "judge",
                    "--queries",
                    str(EXAMPLE / "queries.jsonl"),
                    "--chunks",
                    str(EXAMPLE / "chunks.jsonl"),
                    "--run",
                    str(EXAMPLE / "runs" / "bm25.txt"),
                    "--depth",
                    "5",
                    "-o",
                    str(d / "j.jsonl"),
                    "--qrels-out",
                    str(d / "judged.qrels"),
                    "--base-url",
                    server.url,
                    "--model",
                    "fake",
                    "--cache",
                    str(d / "cache.sqlite"),
                    "--quiet",
                ]
            )
            == 0
        )
    return d / "j.jsonl", d / "judged.qrels"


def example_pairs(judgments: Path) -> list[LabelItem]:
    chunks = {c.id: c for c in ragassay.read_chunks(EXAMPLE / "chunks.jsonl")}
    records = [json.loads(line) for line in judgments.read_text().splitlines()]
    return pair_items(read_query_items(EXAMPLE / "queries.jsonl"), chunks, judgments=records)


# ------------------------------------------------------------------------------------- sample


def test_the_sample_is_fixed_by_its_seed_spread_over_grades_and_queries(judged):
    items = example_pairs(judged[0])
    assert len(items) == 107
    a, info = draw_sample(items, 30, seed=3)
    b, _ = draw_sample(items, 30, seed=3)
    c, _ = draw_sample(items, 30, seed=4)
    assert [i.key for i in a] == [i.key for i in b] and {i.key for i in a} != {i.key for i in c}
    assert len({i.key for i in a}) == 30
    sizes = {s: v["population"] for s, v in info["strata"].items()}
    taken = {s: v["sampled"] for s, v in info["strata"].items()}
    assert sum(taken.values()) == 30 and sum(sizes.values()) == 107
    # evenly over the grades: a stratum smaller than its share gives all it has, the others share the rest
    share = [taken[s] for s in taken if taken[s] < sizes[s]]
    assert max(share) - min(share) <= 1 and all(taken[s] == sizes[s] for s in taken if taken[s] > max(share))
    for s in nonempty(taken):  # within a grade, no query twice before every query of that grade has one
        drawn = [i.group for i in a if i.stratum == s]
        available = {i.group for i in items if i.stratum == s}
        assert len(set(drawn)) == min(len(drawn), len(available)), s
    every, info = draw_sample(items, None)
    assert len(every) == 107 and info["n"] == 107


def test_more_than_there_is_takes_everything_once():
    items = [LabelItem(f"q{i}\tc", {}, i % 2, f"grade {i % 2}", f"q{i}") for i in range(5)]
    sample, info = draw_sample(items, 50)
    assert sorted(i.key for i in sample) == sorted(i.key for i in items) and info["n"] == 5


# --------------------------------------------------------------------------------------- book


def book_of(
    tmp_path: Path, judged: tuple[Path, Path], assessor: str = "alice", out: str = "h.qrels", n: int = 8, **kw
) -> LabelBook:
    sample, info = draw_sample(example_pairs(judged[0]), n, seed=0)
    return LabelBook("pairs", sample, tmp_path / out, assessor, info, **kw)


def test_labels_are_on_disk_at_once_and_a_new_session_resumes(tmp_path, judged):
    book = book_of(tmp_path, judged)
    keys = [it.key for it in book.items]
    assert book.label(keys[0], 3)["model"] == book.by_key[keys[0]].model  # revealed once given
    book.label(keys[1], "1")
    book.skip(keys[2], "the chunk is in German")
    book.label(keys[3], 0)
    assert book.undo() == keys[3]
    events = [json.loads(line) for line in (tmp_path / "h.qrels.events.jsonl").read_text().splitlines()]
    assert [e.get("event") for e in events] == [None, "label", "label", "skip", "label", "undo"]
    assert events[1]["assessor"] == "alice" and events[1]["query_id"] == keys[0].split("\t")[0]
    q0, c0 = keys[0].split("\t")
    q1, c1 = keys[1].split("\t")
    assert ragassay.read_qrels(tmp_path / "h.qrels").to_dict() == {q0: {c0: 3}, **{q1: {c1: 1}}} or ragassay.read_qrels(
        tmp_path / "h.qrels"
    ).to_dict() == {q0: {c0: 3, c1: 1}}
    # no close(): as after a kill. A new session reads the events and goes on where this one stopped
    again = book_of(tmp_path, judged)
    assert again.labels == {keys[0]: 3, keys[1]: 1} and again.skipped == {keys[2]: "the chunk is in German"}
    assert again.progress()["left"] == 5
    cal = json.loads((tmp_path / "h.qrels.calibration.json").read_text())
    assert (cal["kind"], cal["version"], cal["progress"]["labelled"]) == ("calibration", 1, 2)


def test_a_cut_last_event_is_dropped_and_a_broken_middle_one_is_an_error(tmp_path, judged):
    book = book_of(tmp_path, judged)
    key = book.items[0].key
    book.label(key, 2)
    book.close()
    events = tmp_path / "h.qrels.events.jsonl"
    with open(events, "a") as f:
        f.write('{"event": "label", "key": "q0')  # a kill in the middle of a write: never acknowledged
    assert book_of(tmp_path, judged).labels == {key: 2}
    text = events.read_text().replace('{"event": "label", "key": "q0', "")
    lines = text.splitlines()
    events.write_text("\n".join(lines[:1] + ["{broken"] + lines[1:]) + "\n")
    with pytest.raises(InputError, match="events.jsonl:2"):
        book_of(tmp_path, judged)


def test_one_person_per_output_and_bad_labels_refused(tmp_path, judged):
    book = book_of(tmp_path, judged)
    book.label(book.items[0].key, 2)
    book.close()
    with pytest.raises(UsageError, match="holds the labels of 'alice'.*--with"):
        book_of(tmp_path, judged, assessor="bob")
    with pytest.raises(UsageError, match="not a label of this task"):
        book_of(tmp_path, judged).label(book.items[1].key, 4)
    with pytest.raises(UsageError, match="not a label of this task"):
        book_of(tmp_path, judged).label(book.items[1].key, "2.0")
    with pytest.raises(UsageError, match="no item"):
        book_of(tmp_path, judged).label("q99\tnothing", 1)


def test_the_kappa_shown_is_agrees_kappa_and_the_interval_narrows_with_labels(tmp_path, judged, capsys):
    book = book_of(tmp_path, judged, n=40)
    for i, it in enumerate(book.items):  # a person who mostly agrees with the model
        book.label(it.key, it.model if i % 4 else (it.model + 1) % 4)
    shown = book.agreement_with_model()
    assert main(["agree", str(tmp_path / "h.qrels"), str(judged[1]), "--format", "json"]) == 0
    ag = json.loads(capsys.readouterr().out)
    assert ag["pairs"] == shown["n"] == 40
    assert shown["kappa"] == pytest.approx(ag["kappa"], abs=1e-12)
    assert shown["binary_kappa"] == pytest.approx(ag["kappa_binary"][">=2"], abs=1e-12)
    lo, hi = shown["interval"]
    assert lo < shown["kappa"] < hi
    width = hi - lo
    assert shown["more_labels"] == math.ceil(40 * (width / 0.1) ** 2) - 40  # width shrinks as 1/sqrt(n)
    mine = [book.labels[it.key] for it in book.items]
    theirs = [it.model for it in book.items]
    few = agreement(mine[:10], theirs[:10], pair_relevant)
    assert few["interval"][1] - few["interval"][0] > width  # fewer labels, a wider interval


def test_agreement_is_undefined_not_invented_when_everyone_says_one_thing():
    a = agreement([2, 2, 2], [2, 2, 2], pair_relevant)
    assert a["exact"] == 1.0 and a["kappa"] is None and a["interval"] is None and a["more_labels"] is None


def test_other_peoples_labels_and_answers(tmp_path):
    from ragassay.product.labeling import answer_items
    from ragassay.stages.answer_files import read_answers

    answers = read_answers(EXAMPLE / "answers.jsonl", {c.id: c for c in ragassay.read_chunks(EXAMPLE / "chunks.jsonl")})
    items = answer_items(answers, [{"id": a.id, "status": "ok", "label": "correct"} for a in answers])
    sample, info = draw_sample(items, 6, seed=1)
    other = tmp_path / "bob.jsonl"
    other.write_text("".join(json.dumps({"id": it.key, "label": "correct"}) + "\n" for it in sample[:4]))
    book = LabelBook(
        "answers", sample, tmp_path / "alice.jsonl", "alice", info, others={"bob": read_other_labels(other, "answers")}
    )
    book.label(sample[0].key, "correct")
    book.label(sample[1].key, "h")  # the key of a label is taken as the label
    assert book.labels == {sample[0].key: "correct", sample[1].key: "hallucinated"}
    assert book.agreement_with_others()["bob"]["n"] == 2
    from ragassay.stages.answer_files import read_human_labels

    assert read_human_labels(tmp_path / "alice.jsonl") == book.labels


# ------------------------------------------------------------------------------------- server


@pytest.fixture()
def server(tmp_path, judged):
    import threading

    from ragassay.product.label_server import LabelServer

    book = book_of(tmp_path, judged)
    s = LabelServer(book)
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.shutdown()
    book.close()


def fetch(
    url: str, body: dict | None = None, headers: dict | None = None, timeout: float = 30
) -> tuple[int, dict | str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def test_the_server_needs_its_token_and_serves_nothing_else(server):
    base = f"http://127.0.0.1:{server.port}"
    assert server.host == "127.0.0.1" and server.url.startswith(base + "/?token=")
    assert fetch(base + "/")[0] == 403
    assert fetch(base + "/?token=wrong")[0] == 403
    assert fetch(base + "/api/state")[0] == 403
    status, state = fetch(base + "/api/state", headers={"X-Token": server.token})
    assert status == 200 and state["progress"]["total"] == 8
    assert all(i["model"] is None and i["has_model"] for i in state["items"])  # blind until labelled
    status, page = fetch(server.url)
    assert status == 200 and "ragassay label" in page
    for path in ("/../../etc/passwd", "/api/../../etc/passwd", "/h.qrels", "/api/nothing", "/favicon.ico"):
        assert fetch(base + path + ("&" if "?" in path else "?") + "token=" + server.token)[0] == 404, path
    assert fetch(base + "/api/label", {"key": "x", "value": 1})[0] == 403  # a page elsewhere cannot post
    other_host = fetch(server.url, headers={"Host": f"evil.example:{server.port}"})
    assert other_host[0] == 403  # DNS rebinding
    key = state["items"][0]["key"]
    status, after = fetch(base + "/api/label", {"key": key, "value": 2, "seconds": 3.5}, {"X-Token": server.token})
    assert status == 200 and after["done"]["model"] == server.book.by_key[key].model
    assert after["items"][0]["model"] is not None and after["items"][1]["model"] is None
    assert fetch(base + "/api/label", {"key": key, "value": 7}, {"X-Token": server.token})[0] == 400
    assert fetch(base + "/api/label", {"value": 1}, {"X-Token": server.token})[0] == 400
    big = {"key": key, "value": 1, "pad": "x" * 70_000}
    assert fetch(base + "/api/label", big, {"X-Token": server.token})[0] == 400
    assert server.book.labels == {key: 2}


def test_the_answer_page_carries_each_answers_retrieved_contexts(tmp_path):
    """label answers shows what each answer was made from, as --chunks promises: every context id with
    its chunk's title and text, or the contexts given inline (with their ids when given as many)."""
    import threading

    from ragassay.product.label_server import LabelServer
    from ragassay.product.labeling import open_label_book

    chunks = {c.id: c for c in ragassay.read_chunks(EXAMPLE / "chunks.jsonl")}
    rows = [json.loads(line) for line in (EXAMPLE / "answers.jsonl").read_text().splitlines()][:3]
    rows += [
        {
            "id": "inline",
            "question": "How long?",
            "reference": "30 days",
            "response": "30 days",
            "contexts": ["<b>first</b> passage", "second passage"],
        },
        {
            "id": "inline-named",
            "question": "How long?",
            "reference": "30 days",
            "response": "30 days",
            "contexts": ["a text given inline"],
            "context_ids": ["refund-01"],
        },
    ]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    book = open_label_book(
        "answers", tmp_path / "people.jsonl", answers=answers, chunks=EXAMPLE / "chunks.jsonl", assessor="carol"
    )
    server = LabelServer(book)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status, state = fetch(f"http://127.0.0.1:{server.port}/api/state", headers={"X-Token": server.token})
        page_status, page = fetch(server.url)
    finally:
        server.shutdown()
        book.close()
    assert status == 200 and page_status == 200
    shown = {it["key"]: it["show"]["contexts"] for it in state["items"]}
    for row in nonempty(rows[:3]):
        assert shown[row["id"]] == [
            {"id": c, "title": chunks[c].title or None, "text": chunks[c].text} for c in nonempty(row["context_ids"])
        ]
    assert shown["inline"] == [
        {"id": None, "title": None, "text": "<b>first</b> passage"},
        {"id": None, "title": None, "text": "second passage"},
    ]
    assert shown["inline-named"] == [{"id": "refund-01", "title": None, "text": "a text given inline"}]
    # the page puts each on screen as text: its id (or its place) and title, then the text itself
    assert 'el("h3", "Retrieved context (" + sh.contexts.length + ")")' in page
    assert "highlighted(c.text, queryWords(sh.question))" in page and "innerHTML" not in page


# -------------------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser(judged):  # after `judged`: playwright's sync API keeps an event loop running, where asyncio.run fails
    in_ci = os.environ.get("CI", "").lower() == "true"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if in_ci:
            pytest.fail("playwright is missing: the [test] extra installs it")
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    if CHROMIUM is None:
        if in_ci:
            pytest.fail("chromium is missing: .ci/run installs it with apt (apt-get install chromium)")
        pytest.skip("chromium is not installed: apt-get install chromium (.ci/run does)")
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


_STARTED: list[subprocess.Popen] = []  # every label server a test started


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test():
    """A test that fails before it stops its server does not leave it running."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


class Labeller:
    """`ragassay label ...` as a user starts it, in its own process (the URL is read from stdout, or
    from stderr with --format json, where stdout is the summary)."""

    EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}  # as every command stopped so ends (README: exit codes)

    def __init__(self, argv: list[str], cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragassay", "label", *argv, "--no-browser"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _STARTED.append(self.proc)
        said = self.proc.stderr if "json" in argv else self.proc.stdout
        first = said.readline()
        self.url = said.readline().strip()
        assert first.startswith("labelling ") and re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", self.url), (
            first,
            self.url,
            self.proc.stderr.read() if self.proc.poll() is not None else "",
        )
        self.base, self.token = self.url.split("/?token=")
        self.err = ""

    def state(self) -> dict:
        """The page's data, as the page asks for it. The first call is the wait for the server to answer
        on its port: the socket listens from before the URL is printed, so the request waits there
        until the server serves it (a generous deadline, no fixed sleep)."""
        status, state = fetch(self.base + "/api/state", headers={"X-Token": self.token}, timeout=120)
        assert status == 200, state
        return state

    def label(self, key: str, value) -> dict:
        status, state = fetch(self.base + "/api/label", {"key": key, "value": value}, {"X-Token": self.token})
        assert status == 200, state
        return state

    def stop(self, sig: int = signal.SIGINT) -> str:
        """Stop the session once its server answers, as a person does (Ctrl-C, or SIGTERM from a
        supervisor): it ends as every stopped command does, 130 or 143; its summary is returned."""
        self.state()
        self.proc.send_signal(sig)
        out, self.err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == self.EXIT[sig], (self.proc.returncode, self.err)
        return out


def wait_progress(page, text: str) -> None:
    from playwright.sync_api import expect

    try:
        expect(page.locator("#progress")).to_contain_text(text, timeout=10_000)
    except AssertionError as e:
        raise AssertionError(f"{e}\nthe page says: {page.locator('#feedback').inner_text()!r}") from None


def label_args(judged: tuple[Path, Path], out: str, *extra: str) -> list[str]:
    return [
        "pairs",
        "--queries",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--judgments",
        str(judged[0]),
        "--sample",
        "30",
        "-o",
        out,
        *extra,
    ]


def test_a_person_labels_thirty_pairs_by_keyboard_through_a_kill_and_agree_matches_the_page(
    browser, judged, tmp_path, capsys
):
    from playwright.sync_api import expect

    run = Labeller(label_args(judged, "human.qrels", "--assessor", "alice"), tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(run.url)  # keys pressed at once, before the page has loaded its items: none is lost
    grades = "0123"
    for i in range(10):  # ten keys pressed without waiting: each labels the next pair, none is lost
        page.keyboard.press(grades[i % 4])
    wait_progress(page, "10 of 30 labelled")
    page.reload()  # the page reopened: the same place
    wait_progress(page, "10 of 30 labelled")
    page.keyboard.press("u")  # undo takes back the tenth
    wait_progress(page, "9 of 30 labelled")
    page.keyboard.press("1")
    wait_progress(page, "10 of 30 labelled")
    page.keyboard.press("s")  # skip, with a reason
    page.keyboard.type("not English")
    page.keyboard.press("Enter")
    wait_progress(page, "10 of 30 labelled, 1 skipped")
    for i in range(5):
        page.keyboard.press(grades[i % 4])
    wait_progress(page, "15 of 30 labelled")
    run.proc.kill()  # SIGKILL midway: nothing acknowledged may be lost
    run.proc.wait()
    run = Labeller(label_args(judged, "human.qrels", "--assessor", "alice"), tmp_path)
    page.goto(run.url)
    wait_progress(page, "15 of 30 labelled, 1 skipped")
    page.screenshot(path=str(tmp_path / "label-wide.png"))
    for i in range(14):
        page.keyboard.press(grades[(i * 3) % 4])
    wait_progress(page, "29 of 30 labelled, 1 skipped")
    expect(page.locator("h2")).to_contain_text("All 30 items are done")
    shown = page.locator("#agreement").inner_text()
    summary = run.stop()
    assert "labelled 29 of 30 (1 skipped)" in summary
    assert not errors, errors
    kappa_shown = float(re.search(r"kappa, 4 classes\s+(-?[\d.]+)", shown).group(1))
    assert main(["agree", str(tmp_path / "human.qrels"), str(judged[1]), "--format", "json"]) == 0
    ag = json.loads(capsys.readouterr().out)
    assert ag["pairs"] == 29 and round(ag["kappa"], 3) == kappa_shown
    cal = json.loads((tmp_path / "human.qrels.calibration.json").read_text())
    assert cal["model_agreement"]["kappa"] == pytest.approx(ag["kappa"])
    assert cal["sample"]["n"] == 30 and sum(s["sampled"] for s in cal["sample"]["strata"].values()) == 30
    _keep_screenshot(tmp_path / "label-wide.png", "label-wide.png")


def test_a_second_assessor_sees_how_they_agree_and_narrow_screens_work(browser, judged, tmp_path):
    from playwright.sync_api import expect

    first = Labeller(label_args(judged, "alice.qrels", "--assessor", "alice"), tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(first.url)
    for k in "3210321032":
        page.keyboard.press(k)
    wait_progress(page, "10 of 30 labelled")
    first.stop()
    second = Labeller(label_args(judged, "bob.qrels", "--assessor", "bob", "--with", "alice.qrels"), tmp_path)
    narrow = browser.new_page(viewport={"width": 420, "height": 900})
    narrow.goto(second.url)
    for k in "3210321000":
        narrow.keyboard.press(k)
    wait_progress(narrow, "10 of 30 labelled")
    expect(narrow.locator("#people")).to_contain_text("alice")  # named by who made the labels (b6fb1f0)
    expect(narrow.locator("#people")).to_contain_text("labels in common10")
    narrow.screenshot(path=str(tmp_path / "label-narrow.png"), full_page=True)
    second.stop()
    _keep_screenshot(tmp_path / "label-narrow.png", "label-narrow.png")
    same = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragassay",
            "label",
            *label_args(judged, "alice.qrels", "--assessor", "bob"),
            "--no-browser",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert same.returncode == 2 and "holds the labels of 'alice'" in same.stderr


def test_hostile_text_in_a_chunk_stays_text(browser, tmp_path):
    hostile = (
        '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
        "</textarea>\"'><svg onload=\"document.title='pwned'\"> refund"
    )
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(
        json.dumps({"id": "evil-1", "title": "</title><script>document.title='pwned'</script>", "text": hostile}) + "\n"
    )
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q1", "question": "<b onmouseover=alert(1)>refund</b> policy?"}) + "\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 evil-1 1 1.0 x\n")
    labeller = Labeller(
        ["pairs", "--queries", "queries.jsonl", "--chunks", "chunks.jsonl", "--run", "run.txt", "-o", "h.qrels"],
        tmp_path,
    )
    page = browser.new_page()
    page.goto(labeller.url)
    from playwright.sync_api import expect

    expect(page.locator(".text")).to_contain_text("<script>")
    assert page.title() == "ragassay label"
    assert page.locator(".text img, .text script, .text svg, h2 b").count() == 0
    assert page.locator(".text mark").first.inner_text().lower() == "refund"  # the query's word, highlighted
    page.keyboard.press("2")
    wait_progress(page, "1 of 1 labelled")
    assert page.title() == "ragassay label"
    labeller.stop()
    assert (tmp_path / "h.qrels").read_text().split() == ["q1", "0", "evil-1", "2"]


def _keep_screenshot(path: Path, name: str) -> None:
    """RAGASSAY_SCREENSHOTS=DIR keeps the page's pictures (the README's come from here)."""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    where = os.environ.get("RAGASSAY_SCREENSHOTS")
    if where:
        shutil.copy(path, Path(where) / name)


def test_report_track_and_gate_read_the_calibration(tmp_path, judged, capsys):
    book = book_of(tmp_path, judged, n=12)
    for i, it in enumerate(book.items):
        book.label(it.key, it.model if i % 3 else (it.model + 2) % 4)
    book.close()
    cal = tmp_path / "h.qrels.calibration.json"
    assert main(["report", str(cal), "-o", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    shown = book.agreement_with_model()
    assert "Calibration: alice against the model" in text and f"{shown['kappa']:.3f}" in text
    assert "| grade 3 |" in text  # the strata
    assert main(["gate", str(cal), "--min", f"kappa={shown['kappa'] - 0.01:.4f}", "--min", "labelled=12"]) == 0
    assert main(["gate", str(cal), "--min", "kappa_ci_low=0.99"]) == 1
    assert main(["track", str(cal), "--db", str(tmp_path / "h.sqlite")]) == 0
    capsys.readouterr()


def test_answers_are_labelled_with_letters_and_feed_check_human(browser, tmp_path, capsys):
    checks = tmp_path / "checks.jsonl"
    answers = [json.loads(line) for line in (EXAMPLE / "answers.jsonl").read_text().splitlines()]
    checks.write_text("".join(json.dumps({"id": a["id"], "status": "ok", "label": "correct"}) + "\n" for a in answers))
    run = Labeller(
        [
            "answers",
            str(EXAMPLE / "answers.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--checks",
            str(checks),
            "--sample",
            "4",
            "-o",
            "people.jsonl",
            "--assessor",
            "carol",
        ],
        tmp_path,
    )
    page = browser.new_page()
    page.goto(run.url)
    from playwright.sync_api import expect

    expect(page.locator("h3").first).to_contain_text("Reference")
    shown = run.state()["items"][0]["show"]["contexts"]  # the retrieved contexts, with their chunks' texts
    assert shown and all(c["id"] and c["text"] for c in shown)
    expect(page.locator(".context")).to_have_count(len(shown))
    expect(page.locator(".context").first).to_contain_text(shown[0]["id"])
    expect(page.locator(".context").first).to_contain_text(" ".join(shown[0]["text"].split()[:8]))
    expect(page.locator("#scale")).to_contain_text("hallucinated: something false")
    for k in "chpa":
        page.keyboard.press(k)
    wait_progress(page, "4 of 4 labelled")
    expect(page.locator("#agreement")).to_contain_text("labels in common4")
    run.stop()
    from ragassay.stages.answer_files import read_human_labels

    labels = read_human_labels(tmp_path / "people.jsonl")
    assert sorted(labels.values()) == ["abstained", "correct", "hallucinated", "partial"]
    # in another process: playwright keeps an event loop running in this one; the fake model labels every
    # answer, so each of the four people's labels meets a verdict
    from fake_llm import FakeLLM

    with FakeLLM() as fake:
        check = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragassay",
                "check",
                str(EXAMPLE / "answers.jsonl"),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(tmp_path / "c.jsonl"),
                "--human",
                str(tmp_path / "people.jsonl"),
                "--format",
                "json",
                "--base-url",
                fake.url,
                "--model",
                "fake",
                "--no-cache",
            ],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
            timeout=120,
        )
    assert check.returncode == 0, check.stderr
    human = json.loads(check.stdout)["human"]
    assert human["pairs"] == 4 and sum(map(sum, human["confusion"])) == 4


@pytest.mark.parametrize("when", ["printing the URL", "before serving"])
def test_ctrl_c_the_moment_the_url_is_printed_stops_cleanly(tmp_path, judged, monkeypatch, capsys, when):
    """A Ctrl-C that lands before the server loop runs (right after the URL is printed) is the same
    clean stop as one during it: exit 130 (as every command stopped by Ctrl-C) and the summary,
    never a hang or a traceback."""
    import builtins
    import threading

    from ragassay.product.label_server import LabelServer

    if when == "before serving":

        def interrupted(self):
            raise KeyboardInterrupt

        monkeypatch.setattr(LabelServer, "serve_forever", interrupted)
    else:
        real_print = builtins.print

        def print_then_interrupt(*args, **kwargs):
            real_print(*args, **kwargs)
            if args and str(args[0]).startswith("http://127.0.0.1"):
                raise KeyboardInterrupt

        monkeypatch.setattr(builtins, "print", print_then_interrupt)
    result: list[int] = []
    t = threading.Thread(
        target=lambda: result.append(main(["label", *label_args(judged, str(tmp_path / "h.qrels")), "--no-browser"])),
        daemon=True,
    )
    t.start()
    t.join(20)
    assert not t.is_alive(), "label hung after a Ctrl-C before serving"
    assert result == [130]
    printed = capsys.readouterr()
    assert "labelled 0 of 30" in printed.out and "Traceback" not in printed.err
    assert printed.err.strip().splitlines()[-1].startswith("interrupted; every label given is saved")


@pytest.mark.parametrize(
    "sig,form", [(signal.SIGINT, "table"), (signal.SIGTERM, "table"), (signal.SIGINT, "json"), (signal.SIGTERM, "json")]
)
def test_label_stopped_by_ctrl_c_or_sigterm_exits_130_or_143_with_every_label_saved(tmp_path, judged, sig, form):
    """Stopping is the ordinary end of a session: it ends as every command stopped so (130, 143),
    with its summary printed, one line saying so, and every label given in the output."""
    run = Labeller(label_args(judged, "h.qrels", "--assessor", "alice", "--format", form), tmp_path)
    items = run.state()["items"]
    grades = {items[0]["key"]: 3, items[1]["key"]: 0}
    for key, grade in grades.items():
        run.label(key, grade)
    out = run.stop(sig)
    said = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted"
    assert run.err.strip().splitlines()[-1] == (
        f"{said}; every label given is saved: a rerun of the same command resumes where this one stopped"
    )
    assert "Traceback" not in run.err
    if form == "json":
        summary = json.loads(out)
        assert summary["kind"] == "calibration" and summary["progress"]["labelled"] == 2
    else:
        assert "labelled 2 of 30 (0 skipped) into h.qrels" in out and "rerun the same command to go on" in out
    saved = {
        f"{q}\t{c}": g
        for q, docs in ragassay.read_qrels(tmp_path / "h.qrels").to_dict().items()
        for c, g in docs.items()
    }
    assert saved == grades
    again = Labeller(label_args(judged, "h.qrels", "--assessor", "alice"), tmp_path)  # a rerun goes on
    assert again.state()["progress"]["labelled"] == 2
    again.stop(sig)

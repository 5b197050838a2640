"""The answer rules, both ways: what they must decide (no call) and where they must stay silent.

Each row is (class, question, reference(s), response, expected) where expected is a label the rule
must give, or None: the rule must not decide and the model grades it. A rule that is not sure must
not decide: every None row is a wrong (or not certainly right) answer a careless rule calls right.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ragassay.stages import check_rules
from ragassay.stages.check_rules import decide, exact_form, notes, says_nothing

Q = ""  # no question given
ROWS = [
    # the response is an accepted answer as written: spacing, end punctuation, quotes, a leading article
    ("exact", Q, "Paris", "Paris.", "correct"),
    ("exact", Q, "Paris", "  Paris  ", "correct"),
    ("exact", Q, "The Eiffel Tower", "Eiffel Tower", "correct"),
    ("exact", Q, "Eiffel Tower", "the Eiffel  Tower!", "correct"),
    ("exact", Q, ["wrong", "42"], "42", "correct"),
    ("exact", Q, "Marie Curie", "“Marie Curie”", "correct"),
    ("exact", Q, "Marie Curie", "**Marie Curie**.", "correct"),
    ("exact", Q, "no information", "no information.", "correct"),  # the reference itself declines: exact first
    ("exact", Q, "東京", "東京。", "correct"),
    ("exact", Q, "القاهرة", "القاهرة", "correct"),
    ("exact", Q, "-12 °C", "-12 °C", "correct"),
    ("exact", Q, "C#", "C#", "correct"),
    ("exact", Q, "v3.10.2", "v3.10.2.", "correct"),
    # case is kept: units, symbols, codes and names whose case is meaning
    ("case", Q, "5 MW", "5 mW", None),
    ("case", Q, "100 Mb/s", "100 MB/s", None),
    ("case", Q, "Co", "CO", None),
    ("case", Q, "Lisbon", "LISBON", None),
    ("case", Q, "The Eiffel Tower", "eiffel tower", None),
    # no compatibility normalisation: superscripts, fullwidth digits, ligatures, decomposed accents
    ("unicode", Q, "10⁶", "106", None),
    ("unicode", Q, "H₂O", "H2O", None),
    ("unicode", Q, "１２", "12", None),
    ("unicode", Q, "ﬁnance", "finance", None),
    ("unicode", Q, "José", "Jose\u0301", None),
    ("unicode", Q, "-12 °C", "−12 °C", None),  # a Unicode minus: the model reads it, not a rule
    # numbers, versions, signs, suffixes: never compared as values
    ("number", Q, "3.10", "3.1", None),
    ("number", Q, "4.10", "4.1", None),
    ("number", Q, "12.5", "12.500", None),
    ("number", Q, "30", "30.0", None),
    ("number", Q, "1,500", "1500", None),
    ("number", Q, "-5 °C", "5 °C", None),
    ("number", Q, "+3", "3", None),
    ("number", Q, "5", "5!", None),
    ("suffix", Q, "A-", "A", None),
    ("suffix", Q, "BBB-", "BBB", None),
    ("suffix", Q, "C++", "C", None),
    # articles: only a leading English article before a word, never a capital "A" or a name
    ("article", Q, "A major", "major", None),
    ("article", Q, "A levels", "levels", None),
    ("article", Q, "The The", "The", None),
    ("article", Q, "a 5% fee", "5% fee", None),
    ("article", Q, "an apple", "apple", "correct"),
    # lists and order are the model's, in every language
    ("list", "Which cards are accepted?", "Visa, Mastercard and PayPal", "PayPal, Mastercard and Visa", None),
    ("list", "¿Quiénes llegaron, en ese orden?", "Ana y Luis", "Luis y Ana", None),
    ("list", Q, "1,5 and 3", "1, 5 and 3", None),
    # hedges, refusals and look-alike abstentions are the model's
    ("hedge", Q, "Lisbon", "Probably Lisbon", None),
    ("refusal", Q, "x", "I don't know.", None),
    ("refusal", Q, "x", "No lo sé.", None),
    ("refusal", Q, "x", "不知道", None),
    ("refusal", Q, "Sodium", "Na", None),
    ("refusal", Q, "x", "n/a", None),
    ("refusal", Q, "x", "¯\\_(ツ)_/¯", None),
    # a response that says nothing: abstained by rule
    ("nothing", Q, "x", "", "abstained"),
    ("nothing", Q, "x", "   \n\t", "abstained"),
    ("nothing", Q, "x", "...", "abstained"),
    ("nothing", Q, "x", "?", "abstained"),
    ("nothing", Q, "x", "—", "abstained"),
    ("nothing", Q, "x", "🤷‍♀️", None),  # an emoji can answer ("👍" for yes): the model reads it
    ("nothing", Q, "x", "👍", None),
    ("nothing", Q, "x", '""', None),  # an empty string
    ("nothing", Q, "x", "[]", None),  # an empty list
    ("nothing", Q, "x", "-", None),  # a minus sign
    ("nothing", Q, "x", "– —", "abstained"),
    ("nothing", Q, "x", "¿?", "abstained"),
    ("nothing", Q, "x", "\u200b", "abstained"),
    ("nothing", Q, "x", "∞", None),  # a symbol can be an answer
    ("nothing", Q, "x", "%", None),
    ("nothing", Q, "x", "#", None),
    ("doubt", Q, "Paris", "Paris?", None),
    ("doubt", Q, "Paris", "Paris...", None),
    ("code", Q, "init", "__init__", None),
    ("code", Q, "ls", "`ls`", "correct"),
    ("nothing", Q, "?", "?", "correct"),  # the reference is the punctuation: exact match first
]


@pytest.mark.parametrize("cls,question,refs,response,expected", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_rule(cls, question, refs, response, expected):
    refs = refs if isinstance(refs, list) else [refs]
    got = decide(refs, response, question)
    assert (got[0] if got else None) == expected, got


def test_the_table_covers_every_class_both_ways():
    decided = Counter(r[0] for r in ROWS if r[4] is not None)
    silent = Counter(r[0] for r in ROWS if r[4] is None)
    assert len(ROWS) >= 60
    assert decided["exact"] >= 10 and decided["nothing"] >= 6
    for cls in ("case", "unicode", "number", "suffix", "list", "hedge", "refusal"):
        assert silent[cls] and not decided[cls], cls


def load_cases() -> list[dict]:
    """tests/data/check_cases.jsonl: cases written apart from the rules, by someone who saw only
    the principle (what must be decided, what must go to the model)."""
    path = Path(__file__).parents[1] / "data" / "check_cases.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_written_apart(case):
    refs = case["reference"] if isinstance(case["reference"], list) else [case["reference"]]
    got = decide(refs, case["response"], case["question"])
    assert (got[0] if got else "model") == case["expect"], case["why"]


def test_the_cases_written_apart_are_many_and_go_both_ways():
    expect = Counter(c["expect"] for c in CASES)
    assert len(CASES) >= 80 and len({c["id"] for c in CASES}) == len(CASES)
    assert expect["correct"] >= 20 and expect["abstained"] >= 10 and expect["model"] >= 40


def test_the_rules_hold_no_list_of_words():
    """No vocabulary a rule could be fitted to: the module's constants hold the English articles
    and punctuation, nothing else (no units, cue words or refusal phrases)."""
    tree = ast.parse(Path(check_rules.__file__).read_text(encoding="utf-8"))
    words = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for node in ast.walk(stmt.value):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    words.update(w.lower() for w in re.findall(r"[^\W\d_]+", node.value))
    assert words <= {"the", "a", "an"}, words
    assert not any(ch.isalpha() for ch in check_rules._TERMINAL)


def test_exact_form_keeps_what_carries_meaning():
    assert exact_form("  The  Answer, is: A “Cat”! ") == "Answer, is: A “Cat”"
    assert exact_form("C++") != exact_form("C#") != exact_form("C")
    assert exact_form("−5 °C") != exact_form("-5 °C") != exact_form("5 °C")
    assert exact_form('"Paris."') == exact_form("Paris") == "Paris"


def test_says_nothing_is_about_characters_not_phrases():
    assert says_nothing("") and says_nothing(" .!? ") and says_nothing("…") and says_nothing("— ¿?")
    assert not says_nothing("«»") and not says_nothing("()") and not says_nothing("-")
    assert not says_nothing("0") and not says_nothing("Na") and not says_nothing("无") and not says_nothing("$")
    assert not says_nothing("😶") and not says_nothing("%") and not says_nothing("@")


def test_notes_are_hints_the_model_sees_never_labels():
    assert notes(["5 MW"], "5 mW") == [
        "The response differs from the accepted answer '5 MW' only in letter case; "
        "decide whether case changes the meaning here (units, symbols, codes)."
    ]
    # NFKC makes "10⁶" and "106" one text: a rule would be wrong, the note asks the model to look
    assert notes(["10⁶"], "106") == [
        "The response differs from the accepted answer '10⁶' only in the form of some "
        "characters (superscripts, full-width or compatibility forms); decide whether "
        "that changes the meaning."
    ]
    assert notes(["New York"], "NewYork") == [
        "The response differs from the accepted answer 'New York' only in spacing."
    ]
    assert notes(["Paris"], "Paris.") == [] and notes(["Paris"], "Lyon") == []


def rubric_examples() -> list[tuple[str, str, str, str]]:
    """(question, reference, response, label) of every worked example in the check prompt."""
    from ragassay.llm.prompts import load_prompt

    text = load_prompt("check_answer").text
    block = text.split("Worked examples", 1)[1].split("\n\n", 1)[0]
    out = []
    for line in block.splitlines()[1:]:
        q, ref, rest = (part.strip() for part in line[2:].split(" | ", 2))
        response, verdict = rest.rsplit(" => ", 1)
        out.append((q, ref, response.strip(), verdict.split(":")[0].strip()))
    return out


def test_the_rubric_has_about_ten_examples_of_every_label():
    labels = Counter(label for *_, label in rubric_examples())
    assert len(rubric_examples()) >= 10 and set(labels) == {"correct", "partial", "hallucinated", "abstained"}


@pytest.mark.parametrize("question,reference,response,label", rubric_examples())
def test_each_rubric_example_end_to_end(tmp_path, question, reference, response, label):
    """Through check with a model that answers as the rubric says: a rule may decide only when it
    gives the rubric's label; otherwise the model's label reaches the record unchanged."""
    import asyncio
    import json

    import respx

    from fake_llm import chat_reply, make_llm
    from ragassay.data.records import AnswerItem
    from ragassay.stages.check import CheckOptions, check_answers

    base = "http://rubric.test/v1"
    with respx.mock:
        route = respx.post(f"{base}/chat/completions").mock(
            return_value=chat_reply(
                {
                    "reference_facts": "f",
                    "response_claims": "c",
                    "comparison": "x",
                    "label": label,
                    "grounded": None,
                    "context_has_answer": None,
                    "unsupported_claims": [],
                }
            )
        )
        item = AnswerItem(id="e", question=question, reference=reference, response=response)
        done = asyncio.run(
            check_answers(
                [item],
                make_llm(tmp_path, base, use_cache=False),
                tmp_path / "c.jsonl",
                options=CheckOptions(quiet=True),
            )
        )
    (record,) = done.records
    assert record["label"] == label
    if record["decided_by"] == "rule":
        assert route.call_count == 0
    else:
        sent = json.loads(route.calls[0].request.content)["messages"][1]["content"]
        assert response.replace(">>>", "> > >") in sent

"""The answer rules, both ways: what they must decide (no call) and where they must stay silent.

Each row is (class, question, reference(s), response, expected) where expected is a label the rule
must give, or None: the rule must not decide and the model grades it. A rule that is not sure must
not decide: every None row is a wrong (or not certainly right) answer a careless rule calls right.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ragassay.stages.check_rules import decide, normalize

Q = ""  # no question given
ROWS = [
    # plain cases the rules decide
    ("exact", Q, "Paris", "Paris.", "correct"),
    ("exact", Q, "The Eiffel Tower", "eiffel tower", "correct"),
    ("exact", Q, "Lisbon", "  LISBON!  ", "correct"),
    ("exact", Q, ["wrong", "42"], "42", "correct"),
    ("exact", Q, "Marie Curie", "“Marie Curie”", "correct"),
    ("exact", Q, "no information", "No information.", "correct"),  # the reference itself declines: exact match first
    ("exact", Q, "The context does not mention it", "The context does not mention it.", "correct"),
    # signs
    ("sign", Q, "5 °C", "-5 °C", None),
    ("sign", Q, "-5 °C", "5 °C", None),
    ("sign", Q, "$250", "-$250", None),
    ("sign", Q, "-12 °C", "−12 °C", "correct"),     # a Unicode minus is a minus
    ("sign", Q, "-12 °C", "–12 °C", "correct"),     # so is an en dash before a digit
    ("sign", Q, "−12 °C", "12 °C", None),
    ("sign", Q, "0", "-0", "correct"),
    # precision: never round the response onto the reference, or the reference onto the response
    ("precision", Q, "2", "2.5", None),
    ("precision", Q, "4", "3.5", None),
    ("precision", Q, "$30", "$29.60", None),
    ("precision", Q, "$29.60", "$30", None),
    ("precision", Q, "9.95", "9.9", None),
    ("precision", Q, "9.95", "It is 9.950", "correct"),
    ("precision", Q, "30", "30.0", "correct"),
    ("precision", Q, "1,500", "1500", "correct"),
    ("precision", Q, "1500", "1,500", "correct"),
    ("precision", Q, "30 days", "31 days", None),
    ("precision", Q, "1,5", "15", None),             # a decimal comma is not a thousands separator
    # units and currency
    ("unit", Q, "30 days", "30 days", "correct"),
    ("unit", Q, "30 days", "It is 30 days.", "correct"),
    ("unit", Q, "30 days", "30 weeks", None),
    ("unit", Q, "30 days", "30", None),
    ("unit", Q, "$250", "€250", None),
    ("unit", Q, "$250", "250", None),
    ("unit", Q, "25%", "25", None),
    ("unit", Q, "12 °C", "12 °F", None),
    ("unit", Q, "12 °C", "12℃", "correct"),
    ("unit", Q, "10 kg", "10 kg", "correct"),
    # qualifiers
    ("qualifier", Q, "30 days", "more than 30 days", None),
    ("qualifier", Q, "1 kg", "less than 1 kg", None),
    ("qualifier", Q, "30 days", "about 30 days", None),
    ("qualifier", Q, "at least 18", "18", None),
    ("qualifier", Q, "up to 5 items", "5 items", None),
    # codes, versions, dates, times
    ("code", Q, "3.1", "Python 3.10", None),
    ("code", Q, "Python 3.1", "Python 3.10", None),
    ("code", Q, "420", "0420", None),
    ("code", Q, "0420", "420", None),
    ("code", Q, "0420", "0420", "correct"),
    ("code", Q, "03/04/2021", "04/03/2021", None),
    ("code", Q, "9:30", "9.30", None),
    ("code", Q, "1.2.3", "1.2.30", None),
    ("code", Q, "Windows 11", "Windows 10", None),
    ("code", Q, "Route 66", "Route 66", "correct"),
    # names with symbols, single letters after a name
    ("name", Q, "C++", "C", None),
    ("name", Q, "C#", "C", None),
    ("name", Q, "C++", "C#", None),
    ("name", Q, "C++", "c++", "correct"),
    ("name", Q, "Hepatitis A", "Hepatitis", None),
    ("name", Q, "Hepatitis A vaccine", "Hepatitis vaccine", None),
    ("name", Q, "Vitamin B12", "Vitamin B", None),
    ("name", Q, "AT&T", "AT and T", "correct"),
    ("name", Q, "Plan A", "plan a", "correct"),
    # lists: in order always; any order only when the question asks for a set
    ("list", "Which cards are accepted?", "Visa, Mastercard and PayPal", "PayPal; visa & Mastercard", "correct"),
    ("list", "Which cards are accepted?", "Visa, Mastercard and PayPal", "Visa and PayPal", None),
    ("list", "In what order did they finish?", "Ann, Bob, Cy", "Bob, Ann, Cy", None),
    ("list", "In what order did they finish?", "Ann, Bob, Cy", "Ann, Bob and Cy", "correct"),
    ("list", "What are the steps?", "sign in, open Orders, choose Return", "open Orders, sign in, choose Return", None),
    ("list", Q, "red, green", "green, red", None),  # no question: order is not known to be free
    ("list", "Which colours?", "red, green", "red, green, blue", None),
    ("list", "Which years?", "1,500 and 2,000", "2,000 and 1,500", "correct"),
    # hedges that still commit go to the model, whatever they say
    ("hedge", Q, "Lisbon", "I'm not sure, but I think it is Lisbon", None),
    ("hedge", Q, "Lisbon", "I think it is probably Porto", None),
    ("hedge", Q, "30 days", "I don't know, but probably 30 days", None),
    ("hedge", Q, "Lisbon", "Maybe Lisbon?", None),
    # abstentions, and answers that only look like them
    ("abstain", Q, "x", "I don't know.", "abstained"),
    ("abstain", Q, "x", "The context does not mention this.", "abstained"),
    ("abstain", Q, "x", "", "abstained"),
    ("abstain", Q, "x", "Sorry, I cannot answer that based on the provided documents.", "abstained"),
    ("abstain", Q, "x", "There is no information about this in the context.", "abstained"),
    ("abstain", Q, "x", "I'm not sure. The documents do not say.", "abstained"),
    ("abstain", Q, "x", "Not mentioned in the passages.", "abstained"),
    ("abstain", Q, "Yes", "There is no information about refunds after 30 days, so no.", None),
    ("abstain", Q, "No", "No information is collected from children under 13.", None),
    ("abstain", Q, "2019", "The context does not mention 2020; it was 2019.", None),
    ("abstain", Q, "Paris", "I don't know if it is Paris or Lyon.", None),
    ("abstain", Q, "no", "No.", "correct"),
    # sentences are for the model
    ("sentence", Q, "5 business days", "Refunds take 5 business days after inspection", None),
    ("sentence", Q, "Paris", "The capital is Paris, not Lyon.", None),
]


@pytest.mark.parametrize("cls,question,refs,response,expected", ROWS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_rule(cls, question, refs, response, expected):
    refs = refs if isinstance(refs, list) else [refs]
    got = decide(refs, response, question)
    assert (got[0] if got else None) == expected, got


def test_the_table_covers_every_class_both_ways():
    decided = Counter(r[0] for r in ROWS if r[4] is not None)
    silent = Counter(r[0] for r in ROWS if r[4] is None)
    assert len(ROWS) >= 60
    for cls in ("sign", "precision", "unit", "code", "name", "list", "abstain"):
        assert decided[cls] and silent[cls], cls


def test_normalize_keeps_what_carries_meaning():
    assert normalize("  The  Answer, is: A “Cat”! ") == "answer is a cat"
    assert normalize("C++") != normalize("C#") != normalize("C")
    assert normalize("−5 °C") == "-5 °c" != normalize("5 °C")


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
    from fake_llm import chat_reply
    from fake_llm import make_llm

    from ragassay.data.records import AnswerItem
    from ragassay.stages.check import CheckOptions, check_answers

    base = "http://rubric.test/v1"
    with respx.mock:
        route = respx.post(f"{base}/chat/completions").mock(return_value=chat_reply({
            "reference_facts": "f", "response_claims": "c", "comparison": "x", "label": label, "grounded": None,
            "context_has_answer": None, "unsupported_claims": []}))
        item = AnswerItem(id="e", question=question, reference=reference, response=response)
        done = asyncio.run(check_answers([item], make_llm(tmp_path, base, use_cache=False), tmp_path / "c.jsonl",
                                         options=CheckOptions(quiet=True)))
    (record,) = done.records
    assert record["label"] == label
    if record["decided_by"] == "rule":
        assert route.call_count == 0
    else:
        sent = json.loads(route.calls[0].request.content)["messages"][1]["content"]
        assert response.replace(">>>", "> > >") in sent

"""One rule for "the same question twice" (stages/generate_checks.likeness), used by two paths: generate's
check of a candidate against the questions before it (``near_duplicate``, one question against many) and
the test-set report's count of pairs (``set_measures.near_duplicates``, every pair through an inverted
index). On invented pairs — punctuation, case, word order, articles, compatibility forms, other languages
and scripts — both paths must say the same thing, and the index must find exactly the pairs a comparison
of every pair finds."""

from __future__ import annotations

import itertools

import pytest

from helpers import nonempty
from ragassay.product.set_measures import SetQuestion, near_duplicates
from ragassay.stages.generate_checks import near_duplicate, same_question, same_question_pairs

PAIRS = [
    # (a, b, the same question?)
    ("What is the refund policy?", "what is the refund policy", True),  # case and punctuation
    ("The refund window for shoes?", "Refund window for shoes", True),  # a leading article
    ("How long does shipping to Canada take?", "Shipping to Canada: how long does it take?", True),  # word order
    ("Refund window jackets shoes hats", "Refund window jackets shoes", True),  # 4 of 5 content words
    ("Refund window jackets shoes hats coats", "Refund window jackets shoes", False),  # 4 of 6
    ("How do I reset my password?", "How do I change my email address?", False),
    ("Wie lange dauert der Versand nach Kanada?", "wie lange dauert der versand nach kanada", True),  # German, case
    ("Wie lange dauert der Versand nach Kanada?", "Wie lange dauert die Rücksendung nach Kanada?", False),
    ("Wie lange dauert die Rückgabe?", "How long does a return take?", False),  # the same question, translated
    ("Où est ma commande ?", "où est ma commande", True),  # French, a space before the question mark
    ("Quel est le délai de remboursement ?", "Quel est le delai de remboursement ?", False),  # an accent is a letter
    ("Can I return a ﬁle cabinet?", "can i return a file cabinet", True),  # a ligature, folded by NFKC
    ("退货期限是多久？", "退货期限是多久?", True),  # Chinese, a full-width and a plain question mark
    ("退货需要多长时间", "换货需要多长时间", False),  # one character apart: characters are no content words
    ("返品の期限はいつですか？", "返品の期限はいつですか", True),  # Japanese
]


def q(qid: str, text: str) -> SetQuestion:
    return SetQuestion(qid, text)


@pytest.mark.parametrize(("a", "b", "same"), PAIRS)
def test_generate_and_the_set_report_agree_on_a_pair(a, b, same):
    assert same_question(a, b) is same and same_question(b, a) is same
    assert (near_duplicate(a, [b]) is not None) is same  # generate: a candidate against an earlier question
    assert (near_duplicate(b, [a]) is not None) is same
    report = near_duplicates([q("1", a), q("2", b)])  # the test-set report, through its index
    assert report["pairs"] == int(same)
    assert report["examples"] == ([["1", "2"]] if same else [])


def test_generate_says_which_kind_of_repeat():
    assert (
        near_duplicate("What is the refund policy?", ["x", "what is the refund policy"])
        == "duplicate of an earlier question: 'what is the refund policy'"
    )
    assert (
        near_duplicate("Refund window jackets shoes hats", ["Refund window jackets shoes"])
        == "near-duplicate of an earlier question: 'Refund window jackets shoes'"
    )
    assert near_duplicate("How do I reset my password?", ["How do I change my email address?"]) is None


def test_the_index_finds_exactly_the_pairs_every_comparison_finds():
    texts = nonempty(dict.fromkeys(t for a, b, _ in PAIRS for t in (a, b)))  # each text once, in order
    every = [(i, j) for i, j in itertools.combinations(range(len(texts)), 2) if same_question(texts[i], texts[j])]
    assert same_question_pairs(texts) == every
    assert len(every) >= sum(same for _, _, same in PAIRS)  # the pairs above, and any they make across
    report = near_duplicates([q(str(i), t) for i, t in enumerate(texts)], limit=len(every))
    assert report["pairs"] == len(every)
    assert report["examples"] == [[str(i), str(j)] for i, j in every]

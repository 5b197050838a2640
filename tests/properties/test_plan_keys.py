"""A plan's keys held packed (KeyList) and a store's keys held by plan position (KeyLocations):
each answers every question as a plain list or dict would, under any sequence of operations."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragassay.runtime.key_locations import KeyLocations
from ragassay.runtime.plan_keys import KeyList

KEYS = st.one_of(
    st.sampled_from(
        [
            "a" * 24,
            "b" * 24,
            "0123456789abcdef01234567",
            "c" * 23,
            "c" * 25,
            "",
            "caf\u00e9" + "e" * 20,
            "\U0001f600" * 24,
            "k1",
            "k\n2",
        ]
    ),
    st.text(max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["append", "pack", "none", "extend", "extend packed"]), st.lists(KEYS, max_size=4))
    )
)
def test_a_key_list_reads_as_the_list_it_was_given(ops):
    keys, model = KeyList(), []
    for op, given_keys in ops:
        if op.startswith("extend"):
            keys.extend(given_keys, pack=op == "extend packed")
            model.extend(given_keys)
        elif op == "none":
            keys.append(None)
            model.append(None)
        else:
            for k in given_keys:
                keys.append(k, pack=op == "pack")
                model.append(k)
    assert len(keys) == len(model)
    assert list(keys) == model and keys == model
    assert [keys[i] for i in range(len(model))] == model
    assert [keys[-i] for i in range(1, len(model) + 1)] == [model[-i] for i in range(1, len(model) + 1)]
    assert keys[1:5] == model[1:5] and keys[::-2] == model[::-2] and keys[5:1] == model[5:1] == []
    assert keys[-3:] == model[-3:] and keys[2:-2] == model[2:-2] and keys[:] == model
    assert keys.has_none == (None in model)
    assert [k in keys for k in model[:3] + ["absent"]] == [k in model for k in model[:3] + ["absent"]]
    if model:
        with pytest.raises(IndexError):
            keys[len(model)]


def test_a_key_list_packs_what_it_can_and_iterates_across_its_decoding_slices():
    keys = KeyList()
    made = [f"{i:024x}" for i in range(40_000)]
    for i, k in enumerate(made):
        keys.append(k if i % 7 != 3 else "other width", pack=True)  # (the first packed key sets the width)
    expected = [k if i % 7 != 3 else "other width" for i, k in enumerate(made)]
    assert list(keys) == expected and keys[39_999] == expected[39_999]
    assert len(keys._packed) == 24 * 40_000  # one buffer, 24 bytes a place


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            st.sampled_from("abcdefg"),
            st.integers(1, 50),
            st.booleans(),
            st.one_of(st.none(), st.integers(-1, 8)),
        ),
        st.tuples(st.just("load"), st.lists(st.tuples(st.sampled_from("abcdefg"), st.integers(1, 50)), max_size=4)),
        st.tuples(
            st.just("replace"),
            st.dictionaries(st.sampled_from("abcdefg"), st.integers(1, 50), max_size=3),
            st.booleans(),
        ),
    ),
    max_size=25,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from("abcdefg"), unique=True), st.booleans(), OPS)
def test_key_locations_answer_as_a_dict(plan, bind_first, ops):
    """Against a plain dict and set: get, in, len, keys, values, locations_of, failed, after puts by
    plan position (right, wrong or none), loads from a file, and a finalize's replace."""
    loc, model, failed = KeyLocations(), {}, set()
    if bind_first:
        loc.bind(plan)
    same_as(loc, model, failed, plan)
    for op in ops:
        if op[0] == "put":
            _, key, where, ok, pos = op
            loc.put(key, where, ok, pos)
            model[key] = where
            (failed.discard if ok else failed.add)(key)
        elif op[0] == "load":
            loc.load(iter(op[1]))
            for key, where in op[1]:
                model[key] = where
        else:
            _, kept, with_plan = op
            new = {k: model[k] for k in kept if k in model}
            aligned = None
            if with_plan and loc.plan is not None:
                aligned = array("q", [model.get(k, 0) for k in plan])
                new.update({k: w for k, w in zip(plan, aligned) if w})
                loc.replace({k: model[k] for k in kept if k in model and k not in plan}, aligned)
            else:
                loc.replace(dict(new), None)
            model = new
            failed &= set(model)
        same_as(loc, model, failed, plan)


def same_as(loc: KeyLocations, model: dict, failed: set, plan: list) -> None:
    assert {k: loc.get(k) for k in "abcdefgz"} == {k: model.get(k) for k in "abcdefgz"}
    assert [k in loc for k in "abcdefgz"] == [k in model for k in "abcdefgz"]
    assert loc.contains_each(list("abcdefgz")) == [k in model for k in "abcdefgz"]
    assert len(loc) == len(model) and sorted(loc.keys()) == sorted(model)
    assert sorted(loc.values()) == sorted(model.values()) and dict(loc.items()) == model
    assert loc.failed == failed
    assert list(loc.locations_of(plan)) == [model.get(k, 0) for k in plan]
    assert list(loc.locations_of(list("gz"))) == [model.get(k, 0) for k in "gz"]
    if loc.plan is not None:
        assert [loc.at(p) for p in range(len(plan))] == [model.get(k, 0) for k in plan]


def test_a_run_by_position_holds_no_dict_entry_for_what_it_appends():
    """The point of it: a record put at its plan position takes no dict entry; a key held before
    the plan was said, or put outside it, does."""
    plan = [f"k{i}" for i in range(1000)]
    loc = KeyLocations()
    loc.load(iter([("k5", 7), ("other", 9)]))
    loc.bind(plan)
    for p, k in enumerate(plan):
        loc.put(k, 100 + p, p % 100 != 0, p)
    assert len(loc.where) == 2 and len(loc) == 1001
    assert loc.get("k5") == 105 and loc.get("k999") == 1099 and loc.failed == {f"k{i}" for i in range(0, 1000, 100)}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["k1", "k2", "k3", "k4", "k5", "k6"]), unique=True, min_size=1), st.data())
def test_packed_index_keys_answer_as_a_dict_whatever_is_asked(held, data):
    """Keys held packed (as a finished output's index gives them) answer every question as a dict
    of them does: a plan asking query by query in the order they were written, or not; a whole
    plan packed the same way, or in another order, or not packed; then anything else."""
    locations = array("q", range(10, 10 + len(held)))
    model = dict(zip(held, locations))
    loc = KeyLocations()
    loc.hold_packed("".join(held).encode(), 2, locations)
    assert len(loc) == len(held) and sorted(loc.values()) == sorted(locations)
    asked = 0
    while asked < len(held) and data.draw(st.booleans(), label="ask the next few"):
        n = data.draw(st.integers(1, len(held) - asked), label="how many")
        few = (
            held[asked : asked + n]
            if data.draw(st.booleans(), label="in order")
            else data.draw(st.lists(st.sampled_from(held + ["k9", "kk1"]), min_size=1, max_size=3), label="others")
        )
        assert loc.contains_each(few) == [k in model for k in few]
        asked += n
    whole = data.draw(st.sampled_from(["same", "shuffled", "list", "longer"]), label="the plan")
    keys = {
        "same": held,
        "shuffled": data.draw(st.permutations(held), label="order"),
        "list": held,
        "longer": held + ["k9"],
    }[whole]
    plan = list(keys) if whole == "list" else KeyList()
    if whole != "list":
        plan.extend(list(keys), pack=True)
    assert loc.contains_each(plan) == [k in model for k in keys]
    assert list(loc.locations_of(plan)) == [model.get(k, 0) for k in keys]
    assert {k: loc.get(k) for k in held + ["k9"]} == {k: model.get(k) for k in held + ["k9"]}
    assert len(loc) == len(model) and dict(loc.items()) == model and loc.failed == set()


def test_packed_keys_of_another_width_or_not_in_step_are_refused():
    loc = KeyLocations()
    loc.hold_packed(b"k1k2", 2, array("q", [5, 6]))
    assert loc.contains_each(["k1k2"[:3], "2"]) == [False, False]  # same bytes, other keys
    assert loc.contains_each(["k1", "k2"]) == [True, True] and loc.get("k2") == 6
    with pytest.raises(ValueError):
        KeyLocations().hold_packed(b"k1k2x", 2, array("q", [5, 6]))


def test_keys_given_to_pack_in_many_small_lists_are_packed_in_bulk_and_read_back_in_order():
    keys, model = KeyList(), []
    for q in range(7_000):  # 70,000 keys ten at a time, past one bulk; one list holds a key of another width
        ten = [f"{q:020x}{i:04x}" for i in range(10)]
        if q == 6_800:
            ten[3] = "short"
        keys.extend(ten, pack=True)
        model.extend(ten)
        if q == 100:
            assert len(keys) == len(model) and keys[5] == model[5]  # a read in between packs what waits
    keys.append("tail", pack=True)
    model.append("tail")
    assert len(keys) == 70_001 and list(keys) == model and keys[68_003] == "short"
    assert keys.packed() is None  # (two keys are not packed)

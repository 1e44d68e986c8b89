"""The forms a snapshot stores the site state in: each gives back the state it was given, the
newest is the one written, and the older ones (in ledgers written by earlier releases) still
decode, with a field added since at its default."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any

import pytest
from eventsourcing.persistence import JSONTranscoder, Transcoding
from hypothesis import given
from hypothesis import strategies as st

from ledger.state import Association, Bank, Project, Qos, Queue, SiteState, state_to_columns
from ledger.store.application import (
    SNAPSHOT_FORMS,
    SiteStateAsColumns,
    SiteStateAsDict,
    SiteStateAsText,
)


def transcoder() -> JSONTranscoder:
    """The library's transcoder with the snapshot forms registered as the Ledger registers
    them."""
    out = JSONTranscoder()
    for form in SNAPSHOT_FORMS:
        out.register(form())
    return out


def through(form: Transcoding, state: SiteState) -> SiteState:
    """`state` encoded by `form`, stored as JSON and decoded again."""
    decoded = form.decode(json.loads(json.dumps(form.encode(state))))
    assert isinstance(decoded, SiteState)
    return decoded


# --- a state with every object type, every field away from its default ------------------------
def _unlike_default(cls: type[Any], n: int) -> dict[str, Any]:
    """A value for each field of `cls` that is not the field's default."""
    out: dict[str, Any] = {}
    for i, f in enumerate(fields(cls)):
        value: Any
        if f.type == "bool":
            value = f.default is MISSING or not f.default
        elif f.type == "int":
            value = 1000 * n + i + 3
        elif f.type == "float":
            value = 1000.5 * n + i + 0.25
        else:
            assert f.type == "str", f"{cls.__name__}.{f.name}: give the test a value of {f.type}"
            value = f"{f.name}-{n}"
        assert value != f.default, f"{cls.__name__}.{f.name}"
        out[f.name] = value
    return out


def full_state() -> SiteState:
    banks = {b.bank: b for b in (Bank(**_unlike_default(Bank, n)) for n in range(2))}
    assocs = [Association(**_unlike_default(Association, n)) for n in range(3)]
    assocs[1].username = assocs[0].username  # one user in two banks
    queues = [Queue(**_unlike_default(Queue, n)) for n in range(2)]
    qos = [Qos(**_unlike_default(Qos, n)) for n in range(2)]
    projects = [Project(**_unlike_default(Project, n)) for n in range(2)]
    state = SiteState(
        epoch=1_700_000_000.5,
        config={"decay_factor": "0.5", "fairshare_algorithm": "fair-tree"},
        factors={"fairshare": 5, "queue": 7},
        banks=banks,
        associations={},
        default_banks={a.username: a.bank for a in assocs},
        queues={q.queue: q for q in queues},
        projects={p.project: p for p in projects},
        qos={q.qos: q for q in qos},
        next_bank_id=9,
        next_project_id=4,
        last_usage_update=1_700_000_100.0,
        last_fairshare_update=1_700_000_200.25,
        imports={"ab" * 32: {"file": "site.db", "at": 1_700_000_050.0}},
    )
    for a in assocs:
        state.associations.setdefault(a.username, {})[a.bank] = a
    for f in fields(SiteState):
        assert getattr(state, f.name) != getattr(SiteState(), f.name), f.name
    return state


@pytest.mark.parametrize("form", SNAPSHOT_FORMS, ids=lambda form: form.name)
def test_every_form_gives_back_a_state_with_every_object_type(form: type[Transcoding]) -> None:
    state = full_state()
    back = through(form(), state)
    assert back == state
    assert in_order(back) == in_order(state)


def test_the_newest_form_is_the_one_written_and_every_form_is_read() -> None:
    state = full_state()
    stored = transcoder().encode({"state": state})
    assert json.loads(stored)["state"]["_type_"] == SiteStateAsColumns.name
    assert transcoder().decode(stored) == {"state": state}
    for form in SNAPSHOT_FORMS:  # a ledger keeps the snapshots of earlier releases
        older = JSONTranscoder()
        older.register(form())
        assert transcoder().decode(older.encode({"state": state})) == {"state": state}


def test_the_columns_form_reads_a_row_as_the_class_would_build_it() -> None:
    """Rows are read positionally: the objects must be what __init__ makes of the fields."""
    state = through(SiteStateAsColumns(), full_state())
    for objs in (state.banks, state.queues, state.qos, state.projects):
        for obj in objs.values():
            assert vars(obj) == vars(type(obj)(**vars(obj)))
    for assoc in state.all_associations():
        assert list(vars(assoc)) == [f.name for f in fields(Association)]


def test_objects_filed_under_another_key_keep_that_key() -> None:
    state = full_state()
    assoc = state.associations.pop(state.all_associations()[-1].username)
    state.associations["someone-else"] = {"other-bank": next(iter(assoc.values()))}
    state.banks["renamed"] = state.banks.pop(next(iter(state.banks)))
    columns = state_to_columns(state)
    assert "keys" in columns["associations"] and "keys" in columns["banks"]
    assert "keys" not in columns["queues"]
    assert through(SiteStateAsColumns(), state) == state


def test_a_columns_row_without_a_field_added_since_gets_its_default() -> None:
    state = full_state()
    columns = state_to_columns(state)
    table = columns["associations"]
    drop = table["fields"].index("qos")  # not the last: the rest must not shift into it
    table["fields"] = [n for i, n in enumerate(table["fields"]) if i != drop]
    table["rows"] = [[v for i, v in enumerate(row) if i != drop] for row in table["rows"]]
    decoded = SiteStateAsColumns().decode(json.dumps(columns))
    for assoc in state.all_associations():
        assoc.qos = ""
    assert decoded == state
    # Set on each object as __init__ sets it, not only read through the class's default.
    assert all(vars(a)["qos"] == "" for a in decoded.all_associations())


def test_a_columns_row_of_the_wrong_width_is_refused() -> None:
    columns = json.loads(json.dumps(state_to_columns(full_state())))
    columns["queues"]["rows"][0].pop()
    with pytest.raises(ValueError, match="Queue row"):
        SiteStateAsColumns().decode(json.dumps(columns))


# --- snapshots as earlier releases stored them --------------------------------------------------
# The site_state_json snapshot of tests/data/ledgers/neutralized.db, written before QOS existed:
# no `qos` in the state, no `qos` or `default_qos` in an association.
BEFORE_QOS = (
    '{"epoch":1700000000.0,"config":{"priority_usage_reset_period":"2419200",'
    '"priority_decay_half_life":"604800","decay_factor":"0.5","node_weight":"1.0",'
    '"core_weight":"0.0","gpu_weight":"0.0","deny_unknown_queues":"false"},"factors":'
    '{"fairshare":100000,"queue":10000,"bank":0,"urgency":1000},"banks":{"root":{"bank_id":1,'
    '"bank":"root","parent_bank":"","shares":1,"priority":0.0,"active":true,'
    '"ignore_older_than":0.0},"physics":{"bank_id":2,"bank":"physics","parent_bank":"root",'
    '"shares":10,"priority":0.0,"active":true,"ignore_older_than":0.0}},"associations":'
    '{"alice":{"physics":{"username":"alice","bank":"physics","userid":65534,'
    '"creation_time":1700000300.0,"mod_time":1700000300.0,"active":true,"shares":5,'
    '"max_running_jobs":5,"max_active_jobs":7,"max_nodes":2147483647,"max_cores":2147483647,'
    '"queues":"","projects":"*","default_project":"*","max_sched_jobs":2147483647,'
    '"ignore_older_than":0.0}},"bob":{"physics":{"username":"bob","bank":"physics",'
    '"userid":65534,"creation_time":1700000900.0,"mod_time":1700000900.0,"active":true,'
    '"shares":3,"max_running_jobs":5,"max_active_jobs":7,"max_nodes":2147483647,'
    '"max_cores":2147483647,"queues":"","projects":"*","default_project":"*",'
    '"max_sched_jobs":2147483647,"ignore_older_than":0.0}}},"default_banks":'
    '{"alice":"physics","bob":"physics"},"queues":{},"projects":{"*":{"project_id":1,'
    '"project":"*"}},"next_bank_id":3,"next_project_id":2,"last_usage_update":1700000550.0,'
    '"last_fairshare_update":1700000550.0,"imports":{}}'
)


def before_qos_state() -> SiteState:
    def member(name: str, created: float, shares: int) -> Association:
        return Association(name, "physics", 65534, created, created, shares=shares)

    return SiteState(
        epoch=1700000000.0,
        config={
            "priority_usage_reset_period": "2419200",
            "priority_decay_half_life": "604800",
            "decay_factor": "0.5",
            "node_weight": "1.0",
            "core_weight": "0.0",
            "gpu_weight": "0.0",
            "deny_unknown_queues": "false",
        },
        factors={"fairshare": 100000, "queue": 10000, "bank": 0, "urgency": 1000},
        banks={"root": Bank(1, "root", "", 1), "physics": Bank(2, "physics", "root", 10)},
        associations={
            "alice": {"physics": member("alice", 1700000300.0, 5)},
            "bob": {"physics": member("bob", 1700000900.0, 3)},
        },
        default_banks={"alice": "physics", "bob": "physics"},
        projects={"*": Project(1, "*")},
        next_bank_id=3,
        next_project_id=2,
        last_usage_update=1700000550.0,
        last_fairshare_update=1700000550.0,
    )


@pytest.mark.parametrize(
    "stored",
    [
        {"_type_": SiteStateAsText.name, "_data_": BEFORE_QOS},
        {"_type_": SiteStateAsDict.name, "_data_": json.loads(BEFORE_QOS)},
    ],
    ids=[SiteStateAsText.name, SiteStateAsDict.name],
)
def test_an_older_form_from_before_qos_decodes_with_the_defaults(stored: dict[str, Any]) -> None:
    decoded = transcoder().decode(json.dumps({"state": stored}).encode())["state"]
    assert decoded == before_qos_state()
    assert decoded.qos == {}
    assert [(vars(a)["qos"], vars(a)["default_qos"]) for a in decoded.all_associations()] == [
        ("", "")
    ] * 2


# --- any state, by hypothesis -------------------------------------------------------------------
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.booleans(),
    "int": st.integers(),
    "float": st.floats(allow_nan=False),
    "str": st.text(max_size=8),
}


def _rows(cls: type[Any]) -> st.SearchStrategy[Any]:
    return st.builds(cls, **{f.name: _VALUES[str(f.type)] for f in fields(cls)})


def _filed(cls: type[Any], key: str) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of `cls` in a map, mostly under their own key (the fast path), some not."""
    own = st.lists(_rows(cls), max_size=4).map(lambda objs: {getattr(o, key): o for o in objs})
    return own | st.dictionaries(st.text(max_size=4), _rows(cls), max_size=4)


def _associations() -> st.SearchStrategy[dict[str, dict[str, Association]]]:
    def nest(objs: list[Association]) -> dict[str, dict[str, Association]]:
        out: dict[str, dict[str, Association]] = {}
        for o in objs:
            out.setdefault(o.username, {})[o.bank] = o
        return out

    own = st.lists(_rows(Association), max_size=6).map(nest)
    other = st.dictionaries(
        st.text(max_size=4),
        st.dictionaries(st.text(max_size=4), _rows(Association), min_size=1, max_size=3),
        max_size=3,
    )
    return own | other


_texts = st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=4)
_times = st.none() | st.floats(allow_nan=False)
states = st.builds(
    SiteState,
    epoch=st.floats(allow_nan=False),
    config=_texts,
    factors=st.dictionaries(st.text(max_size=6), st.integers(), max_size=4),
    banks=_filed(Bank, "bank"),
    associations=_associations(),
    default_banks=_texts,
    queues=_filed(Queue, "queue"),
    projects=_filed(Project, "project"),
    qos=_filed(Qos, "qos"),
    next_bank_id=st.integers(),
    next_project_id=st.integers(),
    last_usage_update=_times,
    last_fairshare_update=_times,
    imports=st.dictionaries(
        st.text(max_size=8),
        st.fixed_dictionaries({"file": st.text(max_size=8), "at": st.floats(allow_nan=False)}),
        max_size=2,
    ),
)


def in_order(state: SiteState) -> list[Any]:
    """The state's maps as their items in order: == on dicts ignores the order, which listings
    of the state follow."""
    return [
        list(value.items())
        if name != "associations"
        else [(u, list(b.items())) for u, b in value.items()]
        for name, value in vars(state).items()
        if isinstance(value, dict)
    ]


@given(states)
def test_any_state_comes_back_from_every_form_in_the_same_order(state: SiteState) -> None:
    for form in SNAPSHOT_FORMS:
        back = through(form(), state)
        assert back == state
        assert in_order(back) == in_order(state)

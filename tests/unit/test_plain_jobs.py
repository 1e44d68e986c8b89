"""The fast reading of a plain ingest line agrees with the record model on every line it
accepts, and leaves every other line to the model (whose message names the fault)."""

from __future__ import annotations

import json
import pickle
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ledger.ingest import parse_lines, to_record
from ledger.jobs import JobRecord, JobRecordError, parse_job_line
from ledger.plain_jobs import plain_job

LATEST = 1_800_000_000.0
PLAIN = (
    '{"id":7,"username":"alice","bank":"physics","t_submit":1700000000.5,'
    '"t_run":1700000010.25,"t_inactive":1700000110,"nnodes":2,"ncores":8}\n'
)


def slow(line: str, latest: float | None) -> JobRecord | None:
    try:
        return parse_job_line(line, latest)
    except JobRecordError:
        return None


def assert_same_record(fast: JobRecord, model: JobRecord) -> None:
    # The same attributes in the same order, of the same types (1 and 1.0 would give different
    # events and digests), the same fields set and extra, and so the same pickle once read back.
    assert [(k, type(v), v) for k, v in fast.__dict__.items()] == [
        (k, type(v), v) for k, v in model.__dict__.items()
    ]
    assert fast == model
    assert fast.model_extra == model.model_extra == {}
    assert pickle.loads(pickle.dumps(fast)) == model
    assert fast.model_fields_set == model.model_fields_set
    assert json.dumps(to_record(fast, 1.0, 0.5, 2.0)) == json.dumps(to_record(model, 1.0, 0.5, 2.0))


def test_a_plain_line_takes_the_fast_path_and_matches_the_model() -> None:
    fast = plain_job(PLAIN, LATEST)
    model = slow(PLAIN, LATEST)
    assert fast is not None and model is not None
    assert_same_record(fast, model)


def test_a_line_without_t_submit_is_filled_as_the_model_fills_it() -> None:
    line = '{"id":1,"userid":5,"t_run":1700000000,"t_inactive":1700000100,"nnodes":1,"ncores":1}'
    fast = plain_job(line, LATEST)
    model = slow(line, LATEST)
    assert fast is not None and model is not None
    assert fast.t_submit == 1700000000.0 and type(fast.t_submit) is float
    assert_same_record(fast, model)


# Lines the fast path must leave to the model: other shapes, and values the model refuses.
LEFT_TO_THE_MODEL = [
    PLAIN.replace('"id":7', '"id":"f2"'),  # a Flux job ID string: the model's parser reads it
    PLAIN.replace('"bank":"physics"', '"bank":" "'),  # blank: the model reads it as absent
    PLAIN.replace('"bank":"physics"', '"bank":null'),
    PLAIN.replace('"nnodes":2', '"nnodes":2,"partition":"x"'),  # a field of the site's own
    PLAIN.replace('"nnodes":2,', '"R":{"version":1},'),
    PLAIN.replace('"t_inactive":1700000110', '"t_inactive":1700000000'),  # ended before it ran
    PLAIN.replace('"t_submit":1700000000.5', '"t_submit":1700000020'),  # submitted after
    PLAIN.replace('"t_inactive":1700000110', '"t_inactive":1900000000'),  # in the future
    PLAIN.replace('"username":"alice",', ""),  # no user at all
    PLAIN.replace('"username":"alice"', '"username":"al\\u0007ice"'),  # a control character
    PLAIN.replace('"username":"alice"', '"username":"a\\ud800"'),  # a lone surrogate
    PLAIN.replace('"nnodes":2', '"nnodes":2.0'),
    PLAIN.replace('"id":7', '"id":true'),
    PLAIN.rstrip() + " trailing",
    PLAIN.replace('"t_run":1700000010.25', '"t_run":NaN'),
    "\ufeff" + PLAIN,
    "[" + PLAIN.rstrip() + "]",
]


def test_every_other_line_is_left_to_the_model() -> None:
    for line in LEFT_TO_THE_MODEL:
        assert plain_job(line, LATEST) is None, line


def test_parse_lines_words_refusals_as_the_model_does() -> None:
    parsed = parse_lines([PLAIN, *LEFT_TO_THE_MODEL], latest=LATEST)
    expected_bad = []
    for number, line in enumerate([PLAIN, *LEFT_TO_THE_MODEL], start=1):
        try:
            parse_job_line(line, LATEST)
        except JobRecordError as err:
            expected_bad.append((number, str(err)))
    assert [(b.line, b.message) for b in parsed.bad] == expected_bad
    assert len(parsed.records) + len(parsed.bad) == 1 + len(LEFT_TO_THE_MODEL)


FIELDS = [
    "id", "userid", "username", "bank", "queue", "project", "t_submit", "t_run",
    "t_inactive", "nnodes", "ncores", "ngpus", "urgency", "cluster", "qos", "R", "tres", "x",
]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=2**65),
    st.sampled_from([0, 1, 31, 32, 2**32 - 1, 2**32, 2**64 - 1, 2**64, 1_700_000_000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1_699_999_000, max_value=1_700_001_000),
    st.text(max_size=6),
    st.sampled_from(["", " ", "alice", "physics", "cluster", "é", "a\x00", "\u2028"]),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=2),
    st.dictionaries(st.text(max_size=3), scalars, max_size=2),
)


@st.composite
def job_lines(draw: st.DrawFn) -> str:
    """A plain record, perturbed: fields dropped, replaced or added, and the text itself
    sometimes edited (a key repeated, bytes escaped)."""
    record: dict[str, Any] = json.loads(PLAIN)
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        if draw(st.booleans()):
            record.pop(name, None)
        else:
            record[name] = draw(values)
    text = json.dumps(record, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0 and len(record) > 0:
        name = draw(st.sampled_from(sorted(record)))
        text = text[:-1] + f", {json.dumps(name)}: {json.dumps(draw(values))}}}"
    return text


@settings(max_examples=400)
@given(job_lines(), st.sampled_from([None, LATEST, 1_700_000_050.0]))
@example(PLAIN, LATEST)
@example(PLAIN.replace('"id":7', '"id":7,"id":9'), LATEST)
@example(PLAIN.replace('"t_run":1700000010.25', '"t_run":1.7000000102500001e9'), None)
def test_the_fast_path_accepts_only_what_the_model_accepts_and_agrees(
    line: str, latest: float | None
) -> None:
    fast = plain_job(line, latest)
    if fast is None:
        return
    model = slow(line, latest)
    assert model is not None, line
    assert_same_record(fast, model)

"""Flux job ID forms, against flux-core's own encode/parse table (libjob/test/job.c)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.job_ids import (
    JOB_ID_FORMS,
    JOB_ID_MAX,
    FluxJobId,
    JobIdError,
    format_job_id,
    parse_job_id,
)

# flux-core src/common/libjob/test/job.c, jobid_parse_tests (UTF-8 locale).
FLUX_CORE_TABLE = [
    ("dec", 0, "0"),
    ("hex", 0, "0x0"),
    ("dothex", 0, "0000.0000.0000.0000"),
    ("kvs", 0, "job.0000.0000.0000.0000"),
    ("words", 0, "academy-academy-academy--academy-academy-academy"),
    ("emoji", 0, "😃"),
    ("f58", 0, "ƒ1"),
    ("dec", 1, "1"),
    ("hex", 1, "0x1"),
    ("dothex", 1, "0000.0000.0000.0001"),
    ("kvs", 1, "job.0000.0000.0000.0001"),
    ("words", 1, "acrobat-academy-academy--academy-academy-academy"),
    ("emoji", 1, "😄"),
    ("f58", 1, "ƒ2"),
    ("dec", 65535, "65535"),
    ("hex", 65535, "0xffff"),
    ("dothex", 65535, "0000.0000.0000.ffff"),
    ("kvs", 65535, "job.0000.0000.0000.ffff"),
    ("words", 65535, "nevada-archive-academy--academy-academy-academy"),
    ("emoji", 65535, "💁📚"),
    ("f58", 65535, "ƒLUv"),
    ("dec", 6787342413402046, "6787342413402046"),
    ("hex", 6787342413402046, "0x181d0d4d850fbe"),
    ("dothex", 6787342413402046, "0018.1d0d.4d85.0fbe"),
    ("kvs", 6787342413402046, "job.0018.1d0d.4d85.0fbe"),
    ("words", 6787342413402046, "cake-plume-nepal--neuron-pencil-academy"),
    ("emoji", 6787342413402046, "👴😱🔚🎮🕙🚩"),
    ("f58", 6787342413402046, "ƒuzzybunny"),
    ("f58plain", 6787342413402046, "fuzzybunny"),
]


@pytest.mark.parametrize(("form", "job_id", "text"), FLUX_CORE_TABLE)
def test_encodes_and_parses_as_flux_core(form: str, job_id: int, text: str) -> None:
    assert format_job_id(job_id, form) == text
    assert getattr(FluxJobId(job_id), form) == text
    assert parse_job_id(text) == job_id


@given(st.integers(min_value=0, max_value=JOB_ID_MAX), st.sampled_from(JOB_ID_FORMS))
def test_every_form_reads_back(job_id: int, form: str) -> None:
    assert parse_job_id(format_job_id(job_id, form)) == job_id


def test_flux_job_id_formats_as_its_f58_string() -> None:
    job = FluxJobId(65535)
    assert f"{job}" == "ƒLUv"
    assert f"{job:>6}|{job.dec:<7}|" == "  ƒLUv|65535  |"
    assert job + 1 == 65536  # still the integer


@pytest.mark.parametrize(
    "text", ["not-a-word-at-all", "job.zz", "😃x", "😃😃😃😃😃😃😃😃", "ƒ0", "-1", ""]
)
def test_bad_forms_are_refused(text: str) -> None:
    with pytest.raises(JobIdError):
        parse_job_id(text)


def test_a_negative_number_is_not_taken_for_words() -> None:
    with pytest.raises(JobIdError, match="not f58, decimal"):
        parse_job_id("-5")


def test_unknown_form_is_refused() -> None:
    with pytest.raises(JobIdError, match="not a job ID form"):
        format_job_id(1, "octal")


@given(st.text(alphabet="0123456789", min_size=1, max_size=24))
def test_plain_decimal_reads_as_decimal_with_spaces_round_it_does(digits: str) -> None:
    """Plain ASCII digits take a short path; with spaces round them, the general one."""

    def outcome(text: str) -> int | str:
        try:
            return parse_job_id(text)
        except JobIdError as err:
            return err.reason

    assert outcome(digits) == outcome(f" {digits} ")

"""Flux job IDs: the forms Flux prints and reads (f58, decimal, 0x hex, dotted hex).

Pure, and apart from the job record's validation (ledger.jobs, which needs pydantic) so that
commands that only show or parse an ID start quickly.
"""

from __future__ import annotations

import re

from ledger.errors import InvalidValue

JOB_ID_MAX = 2**64 - 1  # a Flux job ID is a 64-bit FLUID

# Flux's base58 alphabet (libutil/fluid.c): no 0, O, I or l.
F58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
F58_PREFIX = "\u0192"  # "ƒ", what Flux prints in a UTF-8 locale
F58_ASCII_PREFIX = "f"  # what Flux prints otherwise; both decode
_F58_DIGITS = {digit: value for value, digit in enumerate(F58_ALPHABET)}
_F58_MAX_LENGTH = 11  # 58**11 > 2**64: Flux refuses longer digit strings

_DECIMAL = re.compile(r"[0-9]+")  # not str.isdigit(): that admits "²" and other digits
_HEX = re.compile(r"[0-9a-fA-F]+")
_DOTHEX_GROUP = re.compile(r"[0-9a-fA-F]{1,4}")


class JobIdError(InvalidValue, ValueError):
    """A value that is not a Flux job ID in a form we read; `reason` is the message
    without the value, for callers that show the value themselves."""

    def __init__(self, value: object, reason: str) -> None:
        super().__init__(f"invalid job ID {value!r}: {reason}")
        self.reason = reason


# --- Flux job IDs -------------------------------------------------------------------------------


def format_f58(job_id: int, *, ascii_prefix: bool = False) -> str:
    """The job ID as Flux prints it: "ƒ" then base58 digits, most significant first."""
    check_job_id_range(job_id, job_id)
    digits: list[str] = []
    remaining = job_id
    while True:
        remaining, digit = divmod(remaining, 58)
        digits.append(F58_ALPHABET[digit])
        if remaining == 0:
            break
    prefix = F58_ASCII_PREFIX if ascii_prefix else F58_PREFIX
    return prefix + "".join(reversed(digits))


def decode_f58(text: str) -> int:
    """The integer behind an f58 job ID ("ƒ2Wbqh5Wo" or its ASCII form "f2Wbqh5Wo")."""
    for prefix in (F58_PREFIX, F58_ASCII_PREFIX):
        if text.startswith(prefix):
            body = text[len(prefix) :]
            break
    else:
        raise JobIdError(text, "f58 starts with 'ƒ' or 'f'")
    if not 1 <= len(body) <= _F58_MAX_LENGTH:
        raise JobIdError(text, f"f58 needs 1 to {_F58_MAX_LENGTH} digits")
    value = 0
    for digit in body:
        if digit not in _F58_DIGITS:
            raise JobIdError(text, f"{digit!r} is not an f58 digit")
        value = value * 58 + _F58_DIGITS[digit]
    check_job_id_range(value, text)
    return value


def parse_job_id(text: str) -> int:
    """A job ID in any form Flux prints and `flux job id` reads, except words and emoji:
    f58 ("ƒ2Wbqh5Wo", "f2Wbqh5Wo"), decimal, "0x" hex, or dotted hex ("0000.0000.0000.04d2")."""
    candidate = text.strip()
    # Flux's own detection order (fluid_string_detect_type): dotted hex may begin with "f",
    # so it is recognised by its dots before the f58 prefix is tried.
    if "." in candidate:
        return _decode_dothex(candidate, text)
    if candidate.startswith((F58_PREFIX, F58_ASCII_PREFIX)):
        return decode_f58(candidate)
    if candidate.startswith("0x") and _HEX.fullmatch(candidate[2:]):
        return check_job_id_range(int(candidate[2:], 16), text)
    if _DECIMAL.fullmatch(candidate):
        return check_job_id_range(int(candidate), text)
    raise JobIdError(text, "not f58, decimal or 0x hex")


def _decode_dothex(candidate: str, original: str) -> int:
    groups = candidate.split(".")
    if len(groups) != 4 or not all(_DOTHEX_GROUP.fullmatch(group) for group in groups):
        raise JobIdError(original, "dotted hex needs four groups of 1 to 4 hex digits")
    value = 0
    for group in groups:
        value = (value << 16) | int(group, 16)
    return value


def check_job_id_range(value: int, shown: object) -> int:
    if not 0 <= value <= JOB_ID_MAX:
        raise JobIdError(shown, "out of range 0 .. 2**64-1")
    return value

"""Flux job IDs: every form Flux prints and reads (f58, f58plain, dec, hex, dothex, kvs, words,
emoji), as flux-core defines them (`src/common/libjob/id.c` flux_job_id_encode,
`src/common/libutil/fluid.c`, `basemoji.c`, `mnemonic.c`; their encodings are checked against
flux-core's own table in `src/common/libjob/test/job.c`).

Pure, and apart from the job record's validation (ledger.jobs, which needs pydantic) so that
commands that only show or parse an ID start quickly.
"""

from __future__ import annotations

import re

import mnemonicode

from ledger.errors import InvalidValue

JOB_ID_MAX = 2**64 - 1  # a Flux job ID is a 64-bit FLUID

# Flux's base58 alphabet (libutil/fluid.c): no 0, O, I or l.
F58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
F58_PREFIX = "\u0192"  # "ƒ", what Flux prints in a UTF-8 locale
F58_ASCII_PREFIX = "f"  # what Flux prints otherwise; both decode
_F58_DIGITS = {digit: value for value, digit in enumerate(F58_ALPHABET)}
_F58_MAX_LENGTH = 11  # 58**11 > 2**64: Flux refuses longer digit strings

# flux-core's basemoji alphabet (libutil/basemoji.c): 576 emoji in CLDR collation order, each one
# code point; an ID is written in base 576, most significant digit first, like f58.
EMOJI_DIGITS = (
    "😃😄😁😆😅😂😉😊😍😘😚😋😜😝😏😒😌😔😪😷😵😲😳😨"
    "😰😥😢😭😱😖😣😞😓😩😫😤😡😠👿💀💩👹👺👻👽👾😺😸"
    "😹😻😼😽🙀😿😾🙈🙉🙊💌💘💝💖💗💓💞💕💟💔💛💚💙💜"
    "💋💯💢💥💫💦💨💬💤👋👌👈👉👆👇👍👎👊👏🙌👐🙏💅💪"
    "👂👃👀👅👄👶👦👧👱👨👩👴👵🙍🙎🙅🙆💁🙋🙇👮💂👷👸"
    "👳👲👰👼🎅💆💇🚶🏃💃👯🏂🏄🏊🛀👫💏💑👪👤👣🐵🐒🐶"
    "🐩🐺🐱🐯🐴🐎🐮🐷🐗🐽🐑🐫🐘🐭🐹🐰🐻🐨🐼🐾🐔🐣🐤🐥"
    "🐦🐧🐸🐢🐍🐲🐳🐬🐟🐠🐡🐙🐚🐌🐛🐜🐝🐞💐🌸💮🌹🌺🌻"
    "🌼🌷🌱🌴🌵🌾🌿🍀🍁🍂🍃🍄🍇🍈🍉🍊🍌🍍🍎🍏🍑🍒🍓🍅"
    "🍆🌽🌰🍞🍖🍗🍔🍟🍕🍳🍲🍱🍘🍙🍚🍛🍜🍝🍠🍢🍣🍤🍥🍡"
    "🍦🍧🍨🍩🍪🎂🍰🍫🍬🍭🍮🍯🍵🍶🍷🍸🍹🍺🍻🍴🔪🌏🗾🌋"
    "🗻🏠🏡🏢🏣🏥🏦🏨🏩🏪🏫🏬🏭🏯🏰💒🗼🗽🌁🌃🌄🌅🌆🌇"
    "🌉🎠🎡🎢💈🎪🚃🚄🚅🚇🚉🚌🚑🚒🚓🚕🚗🚙🚚🚲🚏🚨🚥🚧"
    "🚤🚢💺🚀🕛🕐🕑🕒🕓🕔🕕🕖🕗🕘🕙🕚🌑🌓🌔🌕🌙🌛🌟🌠"
    "🌌🌀🌈🌂🔥💧🌊🎃🎄🎆🎇🎈🎉🎊🎋🎍🎎🎏🎐🎑🎀🎁🎫🏆"
    "🏀🏈🎾🎳🎣🎽🎿🎯🔫🎱🔮🎮🎰🎲🃏🀄🎴🎭🎨👓👔👕👖👗"
    "👘👙👚👛👜👝🎒👞👟👠👡👢👑👒🎩🎓💄💍💎🔊📢📣🔔🎼"
    "🎵🎶🎤🎧📻🎷🎸🎹🎺🎻📱📲📞📟📠🔋🔌💻💽💾💿📀🎥🎬"
    "📺📷📹📼🔍🔎💡🔦🏮📔📕📖📗📘📙📚📓📒📃📜📄📰📑🔖"
    "💰💴💵💸💳💹📧📨📩📤📥📦📫📪📮📝💼📁📂📅📆📇📈📉"
    "📊📋📌📍📎📏📐🔒🔓🔏🔐🔑🔨💣🔧🔩🔗📡💉💊🚪🚽🚬🗿"
    "🏧🚹🚺🚻🚼🚾🚫🚭🔞🔃🔙🔚🔛🔜🔝🔯🔼🔽🎦📶📳📴💱💲"
    "🔱📛🔰🔟🔠🔡🔢🔣🔤🆎🆑🆒🆓🆔🆕🆖🆗🆘🆙🆚🈁🈶🈯🉐"
    "🈹🈚🈲🉑🈸🈴🈳🈺🈵🔴🔵🔶🔷🔸🔹🔺🔻💠🔘🔳🔲🏁🚩🎌"
)
_EMOJI_VALUES = {digit: value for value, digit in enumerate(EMOJI_DIGITS)}
_EMOJI_MAX_LENGTH = 7  # 576**7 > 2**64 (basemoji.c's BASEMOJI_MAXLEN is 7 emoji of 4 bytes)
KVS_PREFIX = "job."  # the kvs form is the dothex form under Flux's KVS `job.` directory

# Every form `flux job id --to=FORM` and flux-accounting's `{jobid.FORM}` accept.
JOB_ID_FORMS = ("dec", "hex", "dothex", "kvs", "words", "emoji", "f58plain", "f58")

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


def format_in_base(job_id: int, digits: str) -> str:
    """`job_id` written with `digits` (its length is the base), most significant digit first."""
    check_job_id_range(job_id, job_id)
    out: list[str] = []
    remaining = job_id
    while True:
        remaining, digit = divmod(remaining, len(digits))
        out.append(digits[digit])
        if remaining == 0:
            break
    return "".join(reversed(out))


def format_dothex(job_id: int) -> str:
    """Four groups of four hex digits, most significant first: "0000.0000.0000.04d2"."""
    check_job_id_range(job_id, job_id)
    return ".".join(f"{(job_id >> shift) & 0xFFFF:04x}" for shift in (48, 32, 16, 0))


def format_words(job_id: int) -> str:
    """Flux's mnemonic form ("academy-academy-academy--academy-academy-academy" for 0).

    Flux encodes the ID's eight bytes as they lie in memory on its (little-endian) hosts, three
    words per four bytes (mnemonic.c's MN_FDEFAULT "x-x-x--x-x-x")."""
    check_job_id_range(job_id, job_id)
    return mnemonicode.mnformat(job_id.to_bytes(8, "little"))


def format_job_id(job_id: int, form: str) -> str:
    """`job_id` in one of JOB_ID_FORMS."""
    value = int(job_id)  # a FluxJobId would show itself as f58
    if form == "dec":
        return str(check_job_id_range(value, value))
    if form == "hex":
        return f"0x{check_job_id_range(value, value):x}"
    if form == "dothex":
        return format_dothex(job_id)
    if form == "kvs":
        return KVS_PREFIX + format_dothex(job_id)
    if form == "words":
        return format_words(job_id)
    if form == "emoji":
        return format_in_base(job_id, EMOJI_DIGITS)
    if form == "f58plain":
        return format_f58(job_id, ascii_prefix=True)
    if form == "f58":
        return format_f58(job_id)
    raise JobIdError(form, f"not a job ID form (one of {', '.join(JOB_ID_FORMS)})")


class FluxJobId(int):
    """A job ID that shows itself as Flux's JobID does: f58 by default, and every other form
    as an attribute, so a format string may say `{jobid.dec:>20}` or `{jobid:<12}`."""

    def __str__(self) -> str:
        return format_f58(self)

    def __format__(self, spec: str) -> str:
        # A string, as flux's JobID formats: `{jobid:d}` is an error there too.
        return format(str(self), spec)

    @property
    def dec(self) -> str:
        return format_job_id(self, "dec")

    @property
    def hex(self) -> str:
        return format_job_id(self, "hex")

    @property
    def dothex(self) -> str:
        return format_job_id(self, "dothex")

    @property
    def kvs(self) -> str:
        return format_job_id(self, "kvs")

    @property
    def words(self) -> str:
        return format_job_id(self, "words")

    @property
    def emoji(self) -> str:
        return format_job_id(self, "emoji")

    @property
    def f58plain(self) -> str:
        return format_job_id(self, "f58plain")

    @property
    def f58(self) -> str:
        return format_job_id(self, "f58")


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
    """A job ID in any form Flux prints and `flux job id` reads: f58 ("ƒ2Wbqh5Wo",
    "f2Wbqh5Wo"), decimal, "0x" hex, dotted hex ("0000.0000.0000.04d2"), kvs
    ("job.0000.0000.0000.04d2"), words or emoji."""
    if text.isascii() and text.isdigit():
        # Decimal, as _DECIMAL reads it below (ASCII digits are no other form's): sacct's ids,
        # one per job, are all this form.
        return check_job_id_range(int(text), text)
    candidate = text.strip()
    # Flux ignores a `job.` prefix (libjob/id.c), so the kvs form reads as dotted hex.
    candidate = candidate.removeprefix(KVS_PREFIX)
    # Flux's own detection order (fluid_string_detect_type): dotted hex and words may begin
    # with "f", so they are recognised by their dots and dashes before the f58 prefix is tried.
    if "." in candidate:
        return _decode_dothex(candidate, text)
    if "-" in candidate and candidate[:1].isalpha():  # "-5" is a bad number, not words
        return _decode_words(candidate, text)
    if candidate.startswith((F58_PREFIX, F58_ASCII_PREFIX)):
        return decode_f58(candidate)
    if candidate[:1] in _EMOJI_VALUES:
        return _decode_emoji(candidate, text)
    if candidate.startswith("0x") and _HEX.fullmatch(candidate[2:]):
        return check_job_id_range(int(candidate[2:], 16), text)
    if _DECIMAL.fullmatch(candidate):
        return check_job_id_range(int(candidate), text)
    raise JobIdError(text, "not f58, decimal, 0x hex, dotted hex, words or emoji")


def _decode_words(candidate: str, original: str) -> int:
    try:
        raw = mnemonicode.mnparse(candidate)
    except Exception:  # mnemonicode raises ValueError or KeyError for unknown words
        raise JobIdError(original, "words are not Flux's mnemonic form") from None
    if len(raw) != 8:
        raise JobIdError(original, "words must encode 8 bytes (six words)")
    return int.from_bytes(raw, "little")


def _decode_emoji(candidate: str, original: str) -> int:
    if len(candidate) > _EMOJI_MAX_LENGTH:
        raise JobIdError(original, f"emoji needs 1 to {_EMOJI_MAX_LENGTH} digits")
    value = 0
    for digit in candidate:
        if digit not in _EMOJI_VALUES:
            raise JobIdError(original, f"{digit!r} is not an emoji digit")
        value = value * len(EMOJI_DIGITS) + _EMOJI_VALUES[digit]
    return check_job_id_range(value, original)


def _decode_dothex(candidate: str, original: str) -> int:
    groups = candidate.split(".")
    if len(groups) != 4 or not all(_DOTHEX_GROUP.fullmatch(group) for group in groups):
        raise JobIdError(original, "dotted hex needs four groups of 1 to 4 hex digits")
    value = 0
    for group in groups:
        value = (value << 16) | int(group, 16)
    return value  # four 16-bit groups cannot exceed 2**64-1


def check_job_id_range(value: int, shown: object) -> int:
    if not 0 <= value <= JOB_ID_MAX:
        raise JobIdError(shown, "out of range 0 .. 2**64-1")
    return value

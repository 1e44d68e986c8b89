"""Slurm's text formats (`ledger.slurm`): sacct -P, sacctmgr dump, sshare -P/-p, TRES strings.

Samples in tests/data/slurm/formats/ are written in the layout Slurm prints (headers, field
order, time and TRES formats); their numbers are made up, only the parsing is checked.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.fair_tree import compute_fair_tree
from ledger.slurm.dump import DumpQos, parse_dump
from ledger.slurm.sacct import parse_sacct
from ledger.slurm.sshare import parse_sshare
from ledger.slurm.tres import format_tres, parse_tres
from ledger.slurm_shares import PARENT, ROOT

FORMATS = Path(__file__).parent.parent / "data" / "slurm" / "formats"
SACCT = (FORMATS / "sacct_tux.txt").read_text()
DUMP = (FORMATS / "tux.cfg").read_text()
SSHARE = (FORMATS / "sshare_tux.txt").read_text()
BERLIN = "Europe/Berlin"


def local(text: str, zone: str = BERLIN) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


# --- TRES strings ---------------------------------------------------------------------------


def test_tres_units_to_mib() -> None:
    assert parse_tres("billing=8,cpu=8,mem=16G,node=1,gres/gpu=2") == {
        "billing": 8,
        "cpu": 8,
        "mem": 16384,
        "node": 1,
        "gres/gpu": 2,
    }
    assert parse_tres("mem=2.50G,bb/cray=1T,fs/disk=2K,Mem2=3") == {
        "mem": 2560,
        "bb/cray": 1024**2,
        "fs/disk": 2048,
        "mem2": 3,
    }
    assert parse_tres("mem=0.5M") == {"mem": 0.5}
    assert parse_tres("") == {}


def test_a_parsed_tres_string_is_the_callers_own_each_time() -> None:
    """parse_tres reads each distinct string once: what it hands out must still be a fresh
    dict, and a malformed string refused every time it is met."""
    first = parse_tres("cpu=8,mem=16G")
    first["cpu"] = 1
    first["gres/gpu"] = 2
    assert parse_tres("cpu=8,mem=16G") == {"cpu": 8, "mem": 16384}
    for _ in range(2):
        with pytest.raises(ValueError, match="appears twice"):
            parse_tres("cpu=8,CPU=4")


@pytest.mark.parametrize("text", ["cpu", "cpu=x", "mem=1Q", "cpu=-1", "cpu=1,cpu=2", "c pu=1"])
def test_tres_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        parse_tres(text)


@given(
    st.dictionaries(
        st.sampled_from(["cpu", "mem", "node", "gres/gpu", "gres/gpu:a100", "license/x"]),
        st.integers(min_value=0, max_value=2**40),
    )
)
def test_tres_round_trip(tres: dict[str, int]) -> None:
    assert parse_tres(format_tres(dict(tres))) == tres


# --- sacct ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("01:00:00", 60), ("1-00:00:00", 1440), ("30", 30), ("00:00:30", 1), ("UNLIMITED", None),
     ("Partition_Limit", None), ("", None)],
)  # fmt: skip
def test_sacct_timelimit_in_minutes(text: str, minutes: int | None) -> None:
    line = f"7|alice|a|p|100|200|COMPLETED|1|{text}"
    result = parse_sacct(f"JobID|User|Account|Partition|Start|End|State|NCPUS|Timelimit\n{line}\n")
    assert result.jobs[0].time_limit == minutes


def test_sacct_bad_timelimit_names_it() -> None:
    with pytest.raises(InvalidValue, match="Timelimit 'soon' is not a time limit"):
        parse_sacct(
            "JobID|User|Account|Partition|Start|End|State|NCPUS|Timelimit\n"
            "7|alice|a|p|100|200|COMPLETED|1|soon\n"
        )


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("Start", "9" * 400, "Start '" + "9" * 400 + "' is not a time"),  # beyond a float
        ("NCPUS", "²", "NCPUS '²' is not a whole number >= 0"),  # a digit int() refuses
    ],
)
def test_sacct_values_python_cannot_convert_are_refused_by_name(
    column: str, value: str, message: str
) -> None:
    fields = {"JobID": "5", "User": "u", "Account": "a", "Partition": "p", "NCPUS": "1"}
    fields |= {"Start": "2026-01-01T00:00:00", "End": "2026-01-01T01:00:00", "State": "COMPLETED"}
    fields[column] = value
    text = "|".join(fields) + "\n" + "|".join(fields.values()) + "\n"
    with pytest.raises(InvalidValue, match=re.escape(message)):
        parse_sacct(text)


def test_sacct_sample() -> None:
    result = parse_sacct(SACCT, timezone=BERLIN)
    assert [job.id for job in result.jobs] == ["4101", "4102", "4103", "4106"]
    assert result.skipped_steps == 3
    assert dict(result.skipped_unfinished) == {"RUNNING": 1, "PENDING": 1}
    assert result.unfinished == 2
    first, gpu, cancelled, oom = result.jobs
    assert first.model_dump() == {
        "id": "4101",
        "jobid": "4101",
        "cluster": "tux",
        "user": "alice",
        "uid": 1001,
        "account": "chemistry",
        "partition": "batch",
        "qos": "normal",
        "t_submit": local("2024-03-09T22:10:04"),
        "t_eligible": local("2024-03-09T22:10:04"),
        "t_start": local("2024-03-09T22:10:05"),
        "t_end": local("2024-03-10T04:10:05"),
        "state": "COMPLETED",
        "cancelled_by": None,
        "tres": {"billing": 8, "cpu": 8, "mem": 16384, "node": 1},
        "nnodes": 1,
        "ncpus": 8,
        "priority": 4294,
        "time_limit": None,
    }
    assert first.elapsed == 6 * 3600
    assert gpu.state == "TIMEOUT"
    assert gpu.tres["gres/gpu:a100"] == 4 and gpu.tres["mem"] == 250 * 1024
    assert (gpu.nnodes, gpu.ncpus, gpu.qos) == (2, 64, "high")
    assert cancelled.state == "CANCELLED" and cancelled.cancelled_by == 1001
    assert cancelled.t_start is None and cancelled.elapsed == 0 and cancelled.tres == {}
    assert oom.id == "4106" and oom.tres["mem"] == 2560 and oom.account == "root"


def test_sacct_columns_by_name_in_any_order_with_trailing_delimiter() -> None:
    text = (
        "State|End|Start|Partition|Account|User|NCPUS|JobID|\n"
        "COMPLETED|1700003600|1700000000|batch|chem|ana|4|77|\n"
        "FAILED|1700000100|1700000000|batch|chem|ana|2|78_3|\n"
        "DEADLINE|None|None|batch|chem|ana|2|79.batch|\n"
    )
    result = parse_sacct(text)
    assert [(j.id, j.ncpus, j.elapsed) for j in result.jobs] == [("77", 4, 3600), ("78_3", 2, 100)]
    assert result.jobs[0].tres == {} and result.jobs[0].nnodes == 0
    assert result.skipped_steps == 1


def test_sacct_times_are_local_to_the_zone_given() -> None:
    text = "JobIDRaw|User|Account|Partition|Start|End|State|NCPUS\n"
    text += "1|u|a|p|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|1\n"
    utc = parse_sacct(text).jobs[0]
    tokyo = parse_sacct(text, timezone="Asia/Tokyo").jobs[0]
    assert utc.t_start - tokyo.t_start == 9 * 3600  # type: ignore[operator]


def test_sacct_missing_columns() -> None:
    with pytest.raises(
        InvalidValue, match=r"lacks JobIDRaw or JobID, Partition, AllocTRES or NCPUS"
    ):
        parse_sacct("User|Account|Start|End|State\n")
    with pytest.raises(InvalidValue, match="no header"):
        parse_sacct("\n\n")


def test_sacct_errors_one_line_per_bad_line() -> None:
    text = "\n".join(
        [
            "JobIDRaw|User|Account|Partition|Start|End|State|AllocTRES",
            "1|u|a|p|2024-03-10T02:30:00|2024-03-10T04:00:00|COMPLETED|cpu=1",  # DST gap in NY
            "2|u|a|p|2024-03-11T05:00:00|2024-03-11T04:00:00|COMPLETED|cpu=1",  # End < Start
            "3|u|a|p|2024-03-11T05:00:00|Unknown|FAILED|cpu=1",  # ended, no End
            "4|u|a|p|2024-03-11T05:00:00|2024-03-11T06:00:00|COMPLETED|cpu=1,mem=1X",
            "5|u|a|p|yesterday|2024-03-11T06:00:00|COMPLETED|cpu=1",
            "6|u|a|p|2024-03-11T05:00:00|2024-03-11T06:00:00|DONE?|cpu=1",
            "7|u|a|p|2024-03-11T05:00:00|2024-03-11T06:00:00|COMPLETED",
            "8||a|p|2024-03-11T05:00:00|2024-03-11T06:00:00|COMPLETED|cpu=1",
            "x9|u|a|p|2024-03-11T05:00:00|2024-03-11T06:00:00|COMPLETED|cpu=1",
            "10|u|a|p|2024-03-11T05:00:00|2024-03-11T06:00:00|COMPLETED|cpu=1",
        ]
    )
    with pytest.raises(InvalidValue) as err:
        parse_sacct(text, timezone="America/New_York")
    lines = str(err.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [f"sacct line {n}" for n in range(2, 11)]
    assert "'2024-03-10T02:30:00' does not exist" in lines[0]
    assert "before Start" in lines[1]
    assert "needs an End" in lines[2]
    assert "mem='1X'" in lines[3]
    assert "'yesterday'" in lines[4]
    assert "'DONE?'" in lines[5]
    assert "7 fields for 8 columns" in lines[6]
    assert "user" in lines[7]
    assert "'x9'" in lines[8]


def test_sacct_fall_back_hour_reads_as_the_first() -> None:
    text = "JobIDRaw|User|Account|Partition|Start|End|State|NCPUS\n"
    text += "1|u|a|p|2024-11-03T01:30:00|2024-11-03T01:45:00|COMPLETED|1\n"
    job = parse_sacct(text, timezone="America/New_York").jobs[0]
    assert job.t_start == datetime(2024, 11, 3, 5, 30, tzinfo=ZoneInfo("UTC")).timestamp()


# --- sacctmgr dump --------------------------------------------------------------------------


def test_dump_qos_is_inherited_from_the_nearest_account_then_the_cluster() -> None:
    text = (
        "QOS - 'a'\nQOS - 'b'\nQOS - 'c':Priority=7:Flags='NoDecay,DenyOnLimit'\n"
        "Cluster - 'x':QOS='a':DefaultQOS='a'\n"
        "Parent - 'root'\n"
        "User - 'u0':DefaultAccount='root'\n"
        "Account - 'top':QOS='b,c':DefaultQOS='c'\n"
        "Parent - 'top'\n"
        "Account - 'mid'\n"
        "User - 'u1':DefaultAccount='top'\n"
        "Parent - 'mid'\n"
        "User - 'u2':DefaultAccount='mid'\n"
        "User - 'u3':DefaultAccount='mid':QosLevel='a':DefaultQOS='a'\n"
        "Account - 'leaf':Priority=5\n"
    )
    dump = parse_dump(text)
    assert [(u.name, u.qos, u.default_qos) for u in dump.users] == [
        ("u0", ("a",), "a"),  # under root: the Cluster line's
        ("u1", ("b", "c"), "c"),  # its account's
        ("u2", ("b", "c"), "c"),  # mid sets none: top's
        ("u3", ("a",), "a"),  # its own
    ]
    assert dump.qos[2] == DumpQos("c", 7, 1.0, "NoDecay,DenyOnLimit", None, line=3)
    # An account's Priority is an association priority, not modelled: ignored.
    assert dump.ignored_fields == ("Priority",)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("QOS - 'q':Priority=high", "QOS 'q': Priority 'high' is not a whole number"),
        ("QOS - 'q':UsageFactor=lots", "QOS 'q': UsageFactor 'lots' is not a number"),
    ],
)
def test_dump_qos_malformed(line: str, message: str) -> None:
    with pytest.raises(InvalidValue) as err:
        parse_dump(line + "\nCluster - 'x'\n")
    assert str(err.value) == f"dump line 1: {message}"


def test_dump_sample() -> None:
    dump = parse_dump(DUMP)
    assert dump.cluster == "tux"
    assert dump.qos == (
        DumpQos("normal", description="Normal QOS default", line=13),
        DumpQos("high", 1000, 2.0, "DenyOnLimit", "high", line=14),
    )
    assert [(a.name, a.parent, a.shares) for a in dump.accounts] == [
        ("physics", ROOT, 40),
        ("science", ROOT, 50),
        ("theory", "physics", PARENT),
        ("chemistry", "science", 30),
    ]
    assert dump.accounts[0].description == "physics department"
    assert [(u.name, u.account, u.shares, u.partition) for u in dump.users] == [
        ("root", ROOT, 1, None),
        ("bob", "physics", 10, None),
        ("carol", "physics", PARENT, "gpu"),
        ("alice", "chemistry", 5, None),
        ("brian", "chemistry", 1, None),
        ("dave", "theory", 3, None),
    ]
    alice = dump.users[3]
    assert (alice.default_account, alice.admin_level, alice.line) == ("chemistry", "Operator", 28)
    assert dump.accounts[3].line == 25  # the first physical line of a continued line
    # Users without QOS= take the Cluster line's (no account on the way sets one).
    assert [(u.name, u.qos) for u in dump.users] == [
        ("root", ("high", "normal")),
        ("bob", ("high", "normal")),
        ("carol", ("high", "normal")),
        ("alice", ("normal",)),
        ("brian", ("high", "normal")),
        ("dave", ("high", "normal")),
    ]
    assert "QOS" not in dump.ignored_fields and "UsageFactor" not in dump.ignored_fields
    assert set(dump.ignored_fields) >= {
        "GrpTRES",
        "MaxJobs",
        "Coordinator",
        "GrpTRESMins",
        "MaxWallDurationPerJob",
        "WCKeys",
        "DefaultWCKey",
    }


def test_dump_feeds_fair_tree_with_sshare_usage() -> None:
    dump = parse_dump(DUMP)
    usage = parse_sshare(SSHARE).user_usage()
    result = compute_fair_tree(dump.slurm_accounts(), dump.slurm_users(usage))
    assert result.user_count == 6
    assert result.user("physics", "bob").fair_share is not None


def test_dump_keys_abbreviated_and_any_case_and_quotes() -> None:
    text = (
        'cluster - "Tux"\n'
        "PARENT - root\n"
        "account - 'Bio':DESC='x: y':Org=o:fa=7\n"
        "Parent - 'bio'\n"
        "user - 'Eve':DefaultAccount=bio:Shares=Parent:GrpTRES=gres/gpu:tesla=4,cpu=2\n"
        "User - 'Mo':Fairshare=-1\n"
    )
    dump = parse_dump(text)
    assert dump.cluster == "tux"
    assert [(a.name, a.shares, a.description) for a in dump.accounts] == [("bio", 7, "x: y")]
    assert [(u.name, u.shares) for u in dump.users] == [("Eve", PARENT), ("Mo", 1)]


def test_dump_round_trip_through_fairshare_2147483647() -> None:
    first = parse_dump(DUMP)
    lines = [f"Cluster - '{first.cluster}'"]
    for parent in [ROOT, *(a.name for a in first.accounts)]:
        users = [u for u in first.users if u.account == parent]
        accounts = [a for a in first.accounts if a.parent == parent]
        if not users and not accounts:
            continue
        lines.append(f"Parent - '{parent}'")
        for u in sorted(users, key=lambda u: u.name):
            part = f":Partition='{u.partition}'" if u.partition else ""
            lines.append(f"User - '{u.name}'{part}:Fairshare={u.shares}")
        for a in sorted(accounts, key=lambda a: a.name):
            lines.append(f"Account - '{a.name}':Fairshare={a.shares}")
    again = parse_dump("\n".join(lines))
    assert {(a.name, a.parent, a.shares) for a in again.accounts} == {
        (a.name, a.parent, a.shares) for a in first.accounts
    }
    assert {(u.name, u.account, u.shares, u.partition) for u in again.users} == {
        (u.name, u.account, u.shares, u.partition) for u in first.users
    }


def test_dump_errors_one_line_per_offending_line() -> None:
    text = "\n".join(
        [
            "Parent - 'root'",  # 1: before Cluster
            "Cluster - 'tux'",
            "QOS - 'late'",  # 3: QOS after Cluster
            "Parent - 'nowhere'",  # 4: undefined parent
            "Account - 'a':Fairshare=lots",  # 5: bad Fairshare
            "Account - 'a':Fairshare=2",
            "Account - 'a'",  # 7: twice
            "Widget - 'w'",  # 8: unknown object
            "User - 'u':Bogus=1",  # 9: unknown key
            "User - 'u'",
            "User - 'u'",  # 11: twice
            "Account - 'b':Description='open",  # 12: unterminated quote
            "Account - 'c':Fairshare=4294967295",  # 13: above PARENT
            "Cluster - 'other'",  # 14: second cluster
        ]
    )
    with pytest.raises(InvalidValue) as err:
        parse_dump(text)
    lines = str(err.value).splitlines()
    assert [int(line.split(":")[0].removeprefix("dump line ")) for line in lines] == [
        1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14,
    ]  # fmt: skip
    assert "'nowhere' is not defined" in lines[2]
    assert "'lots'" in lines[3]
    assert "'Bogus'" in lines[6]


def test_dump_without_cluster() -> None:
    with pytest.raises(InvalidValue, match="no 'Cluster"):
        parse_dump("# only a comment\n")


def test_dump_partition_associations_are_refused_for_the_tree() -> None:
    text = "Cluster - 'c'\nParent - 'root'\nUser - 'u':Partition='a'\nUser - 'u':Partition='b'\n"
    dump = parse_dump(text)
    assert len(dump.users) == 2
    with pytest.raises(InvalidValue, match="dump line 4: user 'u' has several associations"):
        dump.slurm_users()


# --- sshare ---------------------------------------------------------------------------------


def test_sshare_long_parsable() -> None:
    usage = parse_sshare(SSHARE)
    assert usage.usage()[(ROOT, None)] == 2211840
    assert usage.user_usage() == {
        (ROOT, "root"): 0,
        ("physics", "bob"): 1555200,
        ("physics", "carol"): 403200,
        ("theory", "dave"): 0,
        ("chemistry", "alice"): 253440,
        ("chemistry", "brian"): 0,
    }
    carol = next(r for r in usage.rows if r.user == "carol")
    assert (carol.raw_shares, carol.line) == (PARENT, 6)
    assert usage.rows[0].raw_shares is None


def test_sshare_trailing_delimiter_and_chosen_columns() -> None:
    text = "CLUSTER: tux\nUser|RawUsage|Account|Partition|\n|10|root||\nana|2.5|chem|gpu|\n"
    usage = parse_sshare(text)
    assert [(r.account, r.user, r.raw_usage, r.partition, r.cluster) for r in usage.rows] == [
        ("root", None, 10.0, None, "tux"),
        ("chem", "ana", 2.5, "gpu", "tux"),
    ]


def test_sshare_without_header() -> None:
    usage = parse_sshare("root||5\nchem|ana|3\n", columns=["Account", "User", "RawUsage"])
    assert usage.user_usage() == {("chem", "ana"): 3}


def test_sshare_errors() -> None:
    with pytest.raises(InvalidValue, match="lack RawUsage"):
        parse_sshare("Account|User|FairShare\n")
    with pytest.raises(InvalidValue, match="'Shares' is not an sshare column"):
        parse_sshare("Account|User|Shares\n")
    text = (
        "Account|User|RawUsage|RawShares\nroot||-3|\nchem|ana|1e5|1\n|bo|4|1\nchem|cy|4|x\nok|u|1\n"
    )
    with pytest.raises(InvalidValue) as err:
        parse_sshare(text)
    lines = str(err.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [f"sshare line {n}" for n in (2, 3, 4, 5, 6)]
    assert "'-3'" in lines[0] and "'1e5'" in lines[1] and "'x'" in lines[3]


def test_sshare_duplicate_key() -> None:
    usage = parse_sshare("Account|User|RawUsage|Partition\nchem|ana|1|a\nchem|ana|2|b\n")
    with pytest.raises(InvalidValue, match="sshare line 3"):
        usage.usage()

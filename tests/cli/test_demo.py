"""`fairledger demo` builds, runs and prints a small site (what `make demo` shows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import T0, Store


def test_demo_builds_a_site_with_usage_and_fairshare(store: Store) -> None:
    try:
        check_the_flux_site(store)
    finally:
        if store.kind == "postgres":  # the Slurm site's schema beside the test's own
            remove(slurm_beside(store))


def check_the_flux_site(store: Store) -> None:
    out = store.run("demo", "--weeks", "2", now=T0).stdout
    assert out.count("recorded 500, duplicate 0, unmatched 0") == 2
    assert out.count("Bank                            Username") == 2  # a week ago, and today
    tree = out[out.index("Bank ") :]
    assert tree.splitlines()[1].startswith("root ")
    assert "edit-user alice/theory: max_running_jobs 5 → 10  (paper deadline)" in out
    assert "$ fairledger verify\nlog: " in out and "tables equal a rebuild from the log" in out
    rows = json.loads(store.run("list-users", "--json", now=T0).stdout)
    assert len(rows) == 12
    assert all(r["job_usage"] > 0 for r in rows)
    assert max(r["fairshare"] for r in rows) == 1.0
    assert len({r["fairshare"] for r in rows}) > 1
    assert store.run("demo", now=T0, expect=1).stderr.startswith(
        "fairledger: a ledger already exists"
    )


def slurm_beside(store: Store) -> Store:
    """Where the demo puts its Slurm site (README): the SQLite file's name with -slurm, or the
    PostgreSQL schema's name with _slurm."""
    if store.kind == "sqlite":
        return Store("sqlite", store.url.removesuffix(".db") + "-slurm.db")
    return Store("postgres", store.url + "_slurm")


# The demo's dump, counted by hand: root and six accounts; nine user associations (root, gus,
# hal, ana, ben, cho, dee, eli, fay); 120 jobs in a week without a DST change, a step line beside
# every tenth (12), two running and one pending.
SLURM_SECTION = [
    "$ fairledger create-db --fairshare-algorithm fair-tree",
    "$ fairledger edit-config timezone=America/Chicago",
    "$ fairledger import-slurm tux.cfg --conf tux.conf",
    "banks 7, associations 9, default banks set 0, QOS 2",
    "  queues added: batch, gpu",
    "$ fairledger ingest --format sacct tux-week.sacct",
    "recorded 120, duplicate 0, unmatched 0, skipped 15 (steps 12, PENDING 1, RUNNING 2)",
    "$ fairledger sshare -a -l",
    "$ fairledger sshare -a -l --algorithm classic",
    "$ fairledger sprio -l --jobs pending.jsonl",
    "$ fairledger explain-job 4000",
    "$ fairledger history --config",
]


def test_demo_grows_a_slurm_site_in_a_ledger_beside_its_own(store: Store) -> None:
    slurm = slurm_beside(store)
    try:
        out = store.run("demo", "--weeks", "2", now=T0).stdout
        flux, section = out.split("\n# a Slurm site in a ledger of its own (--db ")
        assert flux.count("$ fairledger verify") == 1  # the Flux site's part is as it was
        lines = section.splitlines()
        position = 0
        for wanted in SLURM_SECTION:  # in this order
            position = lines.index(wanted, position) + 1 if wanted in lines[position:] else -1
            assert position > 0, wanted
        assert "edit-config timezone: value UTC → America/Chicago" in section
        check_the_priorities(section)
        assert "tables equal a rebuild from the log (" in lines[-1]  # the Slurm ledger verified
        assert slurm.run("verify", now=None).exit_code == 0
        if store.kind == "sqlite":  # made as create-db makes a file: private
            assert Path(slurm.url.removeprefix("sqlite:///")).stat().st_mode & 0o777 == 0o600
        check_the_slurm_site(slurm)
        # With the Flux ledger removed, a second run still finds the Slurm one, before it
        # writes anything.
        remove(store)
        refused = store.run("demo", now=T0, expect=1).stderr
        assert refused == f"fairledger: a ledger already exists at {slurm.url}\n"
        verify = store.run("verify", now=None, expect=1).stderr
        assert verify.splitlines()[0].count("no ledger at ") == 1
    finally:
        if store.kind == "postgres":
            remove(slurm)


def remove(store: Store) -> None:
    if store.kind == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(store.url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    else:
        from tests.conftest import _drop_schema

        _drop_schema(store.url.split("schema=")[1])


def check_the_slurm_site(slurm: Store) -> None:
    rows = json.loads(slurm.run("sshare", "-a", "-l", "--json", now=T0).stdout)
    keys = [(r["Account"], r["User"]) for r in rows]
    assert keys == [
        ("root", None),
        ("root", "root"),
        ("bio", None),
        ("bio", "gus"),
        ("bio", "hal"),
        ("chem", None),
        ("chem", "ana"),
        ("chemlab", None),
        ("chemlab", "ben"),
        ("chemlab", "cho"),
        ("phys", None),
        ("astro", None),
        ("astro", "dee"),
        ("astro", "eli"),
        ("theory", None),
        ("theory", "fay"),
    ]
    by_key = dict(zip(keys, rows, strict=True))
    # Shares by hand: root's children root 1, bio 30, chem 40, phys 30 (101); chemlab is
    # Fairshare=parent, so its users sit with ana in chem's list: ana 2, ben 1, cho (parent) 0.
    assert by_key[("chem", None)]["NormShares"] == pytest.approx(40 / 101)
    assert by_key[("chem", "ana")]["NormShares"] == pytest.approx(2 / 3)
    assert by_key[("chemlab", "ben")]["NormShares"] == pytest.approx(1 / 3)
    assert by_key[("chemlab", "cho")]["RawShares"] == "parent"
    assert by_key[("chemlab", "cho")]["NormShares"] == pytest.approx(40 / 101)  # chem's
    # An account's usage is its users'; the root user ran nothing.
    users = [r for r in rows if r["User"] is not None]
    assert by_key[("root", None)]["RawUsage"] == pytest.approx(sum(r["RawUsage"] for r in users))
    assert by_key[("chemlab", None)]["RawUsage"] == pytest.approx(
        by_key[("chemlab", "ben")]["RawUsage"] + by_key[("chemlab", "cho")]["RawUsage"]
    )
    # Fair Tree: every user association a rank of 9, none tied (usage drawn at random); the
    # idle root user and cho (parent: LevelFS inf) first in their lists.
    shares = {(r["Account"], r["User"]): r["FairShare"] for r in users}
    assert sorted(shares.values()) == pytest.approx([k / 9 for k in range(1, 10)])
    assert shares[("root", "root")] == 1.0
    assert shares[("chemlab", "cho")] > shares[("chem", "ana")]
    assert shares[("chemlab", "cho")] > shares[("chemlab", "ben")]
    # The classic preview: 2^(-EffectvUsage/NormShares) of each user's own printed row (a
    # parent user's row shows its fs parent's); nothing recorded.
    classic = json.loads(
        slurm.run("sshare", "-a", "-l", "--json", "--algorithm", "classic", now=T0).stdout
    )
    for row in classic:
        if row["User"] is not None and row["NormShares"] > 0:
            expected = 2 ** (-row["EffectvUsage"] / row["NormShares"])
            assert row["FairShare"] == pytest.approx(expected, rel=1e-9), row
    # list-users on the Fair Tree site: Fairshare=parent shown as Slurm does
    listed = json.loads(slurm.run("list-users", "--json", now=T0).stdout)
    assert {r["username"]: r["shares"] for r in listed if r["bank"] == "chemlab"} == {
        "ben": 1,
        "cho": "parent",
    }


def check_the_priorities(section: str) -> None:
    """sprio -l of the four pending jobs (dee's in two partitions: five rows) and explain-job
    of job 4000, both priced with the weights of the demo's slurm.conf."""
    start = section.index("$ fairledger sprio -l")
    lines = section[start:].splitlines()
    assert lines[1].split() == [
        *("JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE", "AGE", "ASSOC"),
        *("FAIRSHARE", "JOBSIZE", "PARTITION", "QOSNAME", "QOS", "NICE", "TRES"),
    ]
    rows = [line.split() for line in lines[2:7]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("4122", "batch", "gus"),
        ("4123", "batch", "ana"),
        ("4124", "gpu", "dee"),  # its partitions by PriorityTier, then as given
        ("4124", "batch", "dee"),
        ("4125", "gpu", "fay"),
    ]
    # PriorityWeightPartition 1000: batch's PriorityJobFactor 1 of the largest, gpu's 2
    assert [r[10] for r in rows] == ["500", "500", "1000", "500", "1000"]
    # PriorityWeightQOS 2000: normal's Priority 10 and high's 100, over 100
    assert [(r[11], r[12]) for r in rows] == [
        ("normal", "200"),
        ("normal", "200"),
        ("high", "2000"),
        ("high", "2000"),
        ("normal", "200"),
    ]
    # ana waited 26 hours and fay 3 days of PriorityMaxAge's 7: 1000 × 26/168 and × 3/7
    assert (rows[1][6], rows[4][6]) == ("155", "429")
    explained = section[section.index("$ fairledger explain-job 4000") :]
    assert "Slurm job 4000 (cluster tux): " in explained
    assert "recorded by Slurm: none" in explained

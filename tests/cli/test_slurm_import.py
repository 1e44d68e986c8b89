"""import-slurm, on both stores: a `sacctmgr dump` tree and `sshare` RawUsage recorded as Site
events in one transaction; the same files again change nothing; a malformed file, a line the
ledger refuses or a usage row naming no association of the dump is one line each, with
nothing recorded.

The dump files of the §8 vectors (research slurm.md §8.1-8.3) are written by hand from their
trees; their usage files are the vectors' own sshare lines; the expected banks, shares and
usages are read from the vectors' JSON (tests/data/slurm/test*.json), and the golden trees
(*.tree) hold usages summed by hand. Account names are lower-cased, as sacctmgr stores them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.slurm_shares import PARENT
from tests.conftest import DATA, T0, Store

SLURM = DATA / "slurm"


def imported(store: Store, dump: str, usage: str | None = None, *more: str) -> Any:
    args = ["import-slurm", str(SLURM / dump)]
    if usage is not None:
        args += ["--usage", str(SLURM / usage)]
    return store.run(*args, *more)


def users(store: Store) -> dict[tuple[str, str], dict[str, Any]]:
    rows = json.loads(store.run("list-users", "--json").stdout)
    return {(r["username"], r["bank"]): r for r in rows}


def banks(store: Store) -> dict[str, tuple[str, int]]:
    rows = json.loads(store.run("list-banks", "--json").stdout)
    return {r["bank"]: (r["parent_bank"], r["shares"]) for r in rows}


def vector(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SLURM / f"{name}.json").read_text())
    return data


def shares(value: int | str) -> int:
    return PARENT if value == "parent" else int(value)


def test_a_site_comes_over_with_shares_defaults_and_usage(ledger_store: Store) -> None:
    result = imported(ledger_store, "site.cfg", "site.sshare", "--json")
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("cluster", "banks", "associations", "default_banks")} == {
        "cluster": "tux",
        "banks": 6,  # root and five accounts
        "associations": 6,
        "default_banks": 1,  # alice's DefaultAccount is her second account
    }
    assert report["balance"] == {
        "file": str(SLURM / "site.sshare"),
        "associations": 3,  # the users with a RawUsage above 0
        "raw_usage": 1334.5,  # 1000.25 + 234.25 + 100
    }
    assert report["qos"] == 2
    # The QOS lines' Priority, UsageFactor and Flags and the associations' QOS are read; the
    # limits beside them (a QOS's GrpTRES too) are not modelled.
    assert report["ignored"] == [
        "fields: Description, Organization, GrpTRES, MaxJobs, Coordinator, GrpTRESMins,"
        " MaxWallDurationPerJob, AdminLevel",
        "Partition of per-partition associations, kept per account: carol (theory: gpu)",
        "sshare account rows: 6 (an account's usage is the sum of its users')",
    ]
    ledger_store.run("update-usage")
    tree = ledger_store.run("view-bank", "root", "-t").stdout
    assert tree == (SLURM / "site.tree").read_text()
    shown = {
        key: (row["shares"], row["default_bank"], row["job_usage"])
        for key, row in users(ledger_store).items()
    }
    assert shown == {
        ("alice", "chemistry"): (5, "chemistry", 100.0),
        ("alice", "optics"): (2, "chemistry", 1000.25),
        ("brian", "chemistry"): (1, "chemistry", 0.0),
        # Fairshare=2147483647 and Fairshare=parent are one value, PARENT; on this Fair Tree
        # site list-users --json shows it as Slurm does, "parent".
        ("carol", "theory"): ("parent", "theory", 0.0),
        ("dave", "theory"): ("parent", "theory", 0.0),
        ("erin", "optics"): (1, "optics", 234.25),  # no Fairshare: Slurm's default, 1
    }
    assert banks(ledger_store)["theory"] == ("physics", "parent")


def test_the_dumps_qos_and_the_associations_lists_come_over(ledger_store: Store) -> None:
    imported(ledger_store, "site.cfg")
    assert json.loads(ledger_store.run("list-qos", "--json").stdout) == [
        {"qos": "high", "priority": 1000, "usage_factor": 2.0, "flags": "", "description": "high"},
        {
            "qos": "normal",
            "priority": 0,
            "usage_factor": 1.0,
            "flags": "",
            "description": "Normal QOS default",
        },
    ]
    # alice's chemistry line names QOS='normal'; every other association takes the Cluster
    # line's QOS='high,normal' (no account between sets one), as slurmdbd inherits it.
    shown = {key: (row["qos"], row["default_qos"]) for key, row in users(ledger_store).items()}
    assert shown == {
        ("alice", "chemistry"): ("normal", ""),
        ("alice", "optics"): ("high,normal", ""),
        ("brian", "chemistry"): ("high,normal", ""),
        ("carol", "theory"): ("high,normal", ""),
        ("dave", "theory"): ("high,normal", ""),
        ("erin", "optics"): ("high,normal", ""),
    }
    text = ledger_store.run("history", "--qos", "high").stdout
    assert "add-qos high: priority 1000, usage_factor 2.0, description high" in text


def test_a_qos_the_ledger_refuses_is_one_line_and_nothing_is_written(
    ledger_store: Store, tmp_path: Path
) -> None:
    dump = tmp_path / "bad.cfg"
    dump.write_text(
        "QOS - 'normal':Flags='NoDecay,Sometimes'\n"
        "Cluster - 'tux':QOS='normal'\n"
        "Parent - 'root'\n"
        "User - 'amy':DefaultAccount='root':QOS='gold'\n"
    )
    position = ledger_store.log_position()
    result = ledger_store.run("import-slurm", str(dump), expect=1)
    assert result.stderr.splitlines() == [
        "fairledger: dump line 1: QOS normal: invalid QOS flag: 'Sometimes' (known: DenyOnLimit,"
        " EnforceUsageThreshold, NoDecay, NoReserve, OverPartQOS, PartitionMaxNodes,"
        " PartitionMinNodes, PartitionTimeLimit, Relative, RequiresReservation, UsageFactorSafe)",
        "dump line 4: user amy in account root: QOS gold not found",
    ]
    assert ledger_store.log_position() == position


def test_the_text_report(ledger_store: Store) -> None:
    out = imported(ledger_store, "test24_1.cfg", "test24_1.sshare").stdout.splitlines()
    assert out[0].startswith(f"imported cluster test24 from {SLURM / 'test24_1.cfg'} (sha256 ")
    assert out[1:] == [
        "banks 8, associations 6, default banks set 0",
        "fairshare_algorithm weighted-walk -> fair-tree (Slurm's default)",
        f"opening balance from {SLURM / 'test24_1.sshare'}: 4 associations, raw usage 100",
        "ignored:",
        "  fields: Description, Organization",
    ]


def test_the_same_files_again_change_nothing(ledger_store: Store) -> None:
    imported(ledger_store, "site.cfg", "site.sshare")
    position = ledger_store.log_position()
    again = imported(ledger_store, "site.cfg", "site.sshare")
    assert again.stdout.startswith("site.cfg was already imported (2023-11-14T22:13:20+00:00,")
    assert again.stdout.endswith("): nothing changed\n")
    assert ledger_store.log_position() == position
    # Without the usage file it is another import, into a ledger that holds a site: refused.
    other = ledger_store.run("import-slurm", str(SLURM / "site.cfg"), expect=1)
    assert other.stderr == (
        "fairledger: the ledger already holds a site (root bank root); import-slurm brings a"
        " site into a ledger with no banks\n"
    )
    assert ledger_store.log_position() == position


@pytest.mark.parametrize("name", ["test24_1", "test24_4", "test_130_2"])
def test_the_vectors_trees_and_usage_come_over(ledger_store: Store, name: str) -> None:
    data = vector(name)
    result = ledger_store.run(
        "import-slurm",
        str(SLURM / f"{name}.cfg"),
        "--usage",
        str(SLURM / f"{name}.sshare"),
        expect=None,
    )
    assert result.exit_code == 0, result.stderr
    ledger_store.run("update-usage")
    expected_banks = {"root": ("", 1)}
    for account, parent, raw in data["accounts"]:
        expected_banks[account.lower()] = (
            parent.lower() if parent != "root" else "root",
            shares(raw),
        )
    shown_banks = {
        bank: (parent, PARENT if value == "parent" else value)
        for bank, (parent, value) in banks(ledger_store).items()
    }
    assert shown_banks == expected_banks
    expected_users = {
        (user, account.lower()): (shares(raw), account.lower(), float(usage))
        for user, account, raw, usage in data["users"]
    }
    shown_users = {
        key: (
            PARENT if row["shares"] == "parent" else row["shares"],
            row["default_bank"],
            row["job_usage"],
        )
        for key, row in users(ledger_store).items()
    }
    assert shown_users == expected_users


def test_test24_1s_tree_as_view_bank_shows_it(ledger_store: Store) -> None:
    imported(ledger_store, "test24_1.cfg", "test24_1.sshare")
    ledger_store.run("update-usage")
    assert (
        ledger_store.run("view-bank", "root", "-t").stdout == (SLURM / "test24_1.tree").read_text()
    )


def test_a_weighted_walk_ledger_becomes_a_fair_tree_site(ledger_store: Store) -> None:
    """A Slurm site ranks by Fair Tree unless told otherwise: the import records the switch
    first, and history shows it."""
    report = json.loads(imported(ledger_store, "test_130_2.cfg", None, "--json").stdout)
    assert report["fairshare_algorithm"] == ["weighted-walk", "fair-tree"]
    assert (
        ledger_store.run("view-config", "fairshare_algorithm").stdout.strip().endswith("fair-tree")
    )
    history = ledger_store.run("history", "--config").stdout
    assert "fairshare_algorithm" in history and "fair-tree" in history


def test_a_classic_ledger_keeps_its_algorithm(store: Store) -> None:
    store.run("create-db", "--fairshare-algorithm", "classic")
    report = json.loads(imported(store, "test_130_2.cfg", None, "--json").stdout)
    assert report["fairshare_algorithm"] is None
    assert store.run("view-config", "fairshare_algorithm").stdout.strip().endswith("classic")


def sshare_rows(store: Store, columns: list[str]) -> dict[tuple[str, str], str]:
    """`sshare -a -l -P`'s rows by (account, user), indentation stripped, after checking its
    header is `columns` and that no (account, user) comes twice."""
    lines = store.run("sshare", "-a", "-l", "-P").stdout.splitlines()
    assert lines[0] == "|".join(columns)
    rows = {}
    for line in lines[1:]:
        fields = line.strip().split("|")
        rows[(fields[0], fields[1])] = line.strip()
    assert len(rows) == len(lines) - 1
    return rows


# Slurm's own algorithm for each vector (docs/slurm-fairshare.md): test24.1 and test_130_2
# are classic, test24.4 Fair Tree.
VECTOR_ALGORITHMS = {"test24_1": "classic", "test24_4": "fair-tree", "test_130_2": "classic"}


@pytest.mark.parametrize("name", sorted(VECTOR_ALGORITHMS))
def test_the_vectors_row_for_row_through_import_update_fshare_and_sshare(
    store: Store, name: str
) -> None:
    """The issue's path end to end: import-slurm of the dump and its sshare usage, update-fshare,
    then sshare -a -l -P gives Slurm's rows (accounts lower-cased, as sacctmgr stores them)."""
    data = vector(name)
    store.run("create-db", "--fairshare-algorithm", VECTOR_ALGORITHMS[name])
    imported(store, f"{name}.cfg", f"{name}.sshare")
    store.run("update-fshare")
    rows = sshare_rows(store, data["columns"])
    for expected in data["expected"]:
        fields = expected.split("|")
        fields[0] = fields[0].lower()
        wanted = "|".join(fields).removesuffix("|")
        # test24.1's expected lines stop after FairShare (its test matched a prefix)
        assert rows[(fields[0], fields[1])].startswith(wanted), (expected, rows)
    if name == "test24_4":  # the one vector that lists every row, accounts too
        assert len(rows) == len(data["expected"])


def test_a_malformed_dump_is_one_line_per_bad_line_and_nothing_is_written(
    ledger_store: Store, tmp_path: Path
) -> None:
    dump = tmp_path / "bad.cfg"
    dump.write_text(
        "Cluster - 'tux'\n"
        "Parent - 'root'\n"
        "Account - 'physics':Fairshare=40\n"
        "Account - 'chemistry':Fairshare=lots\n"
        "Parent - 'biology'\n"
        "User - 'ann':DefaultAccount='physics':Colour='blue'\n"
    )
    position = ledger_store.log_position()
    result = ledger_store.run("import-slurm", str(dump), expect=1)
    assert result.stderr == (
        "fairledger: dump line 4: Fairshare 'lots' is not a whole number or 'parent'\n"
        "dump line 5: Parent 'biology' is not defined: add it as an Account before its children\n"
        "dump line 6: unknown field 'Colour'\n"
    )
    assert result.stdout == ""
    assert ledger_store.log_position() == position


def test_usage_rows_must_name_the_dumps_associations(ledger_store: Store, tmp_path: Path) -> None:
    usage = tmp_path / "usage.txt"
    usage.write_text(
        "Account|User|RawUsage\n"
        "accountb|User1|20\n"
        "accountb|Nobody|5\n"
        "accountc|User2|-3\n"
        "accountz|User3|1\n"
    )
    position = ledger_store.log_position()
    result = ledger_store.run(
        "import-slurm", str(SLURM / "test24_1.cfg"), "--usage", str(usage), expect=1
    )
    # The file's own errors come first, alone: the rows are checked once it reads.
    assert result.stderr == "fairledger: sshare line 4: RawUsage '-3' is not a number >= 0\n"
    usage.write_text(
        "Account|User|RawUsage\n"
        "accountb|User1|20\n"
        "accountb|Nobody|5\n"
        "accountz|User3|1\n"
        "AccountB|User1|2\n"
    )
    result = ledger_store.run(
        "import-slurm", str(SLURM / "test24_1.cfg"), "--usage", str(usage), expect=1
    )
    assert result.stderr == (
        "fairledger: sshare line 3: user 'Nobody' has no association in account 'accountb' in"
        " the dump\n"
        "sshare line 4: user 'User3' has no association in account 'accountz' in the dump\n"
        "sshare line 5: user 'User1' in account 'accountb' again (line 2); per-partition rows"
        " are one association here\n"
    )
    assert ledger_store.log_position() == position


def test_a_fraction_of_raw_usage_is_kept(ledger_store: Store, tmp_path: Path) -> None:
    usage = tmp_path / "usage.txt"
    usage.write_text("User|Account|RawUsage|\nUser1|accountb|0.125|\nUser2|accountc|1234.5|\n")
    ledger_store.run("import-slurm", str(SLURM / "test24_1.cfg"), "--usage", str(usage))
    ledger_store.run("update-usage")
    shown = users(ledger_store)
    assert shown[("User1", "accountb")]["job_usage"] == 0.125
    assert shown[("User2", "accountc")]["job_usage"] == 1234.5


def test_root_cannot_take_its_parents_shares(ledger_store: Store, tmp_path: Path) -> None:
    dump = tmp_path / "root-parent.cfg"
    dump.write_text("Cluster - 'tux':Fairshare=parent\nParent - 'root'\nAccount - 'a'\n")
    result = ledger_store.run("import-slurm", str(dump), expect=1)
    assert result.stderr == (
        "fairledger: root-parent.cfg: the Cluster line's Fairshare=parent: root has no parent to"
        " take its shares from\n"
    )


def test_two_partition_associations_in_one_account_are_refused(
    ledger_store: Store, tmp_path: Path
) -> None:
    dump = tmp_path / "partitions.cfg"
    dump.write_text(
        "Cluster - 'tux'\nParent - 'root'\nAccount - 'a'\nParent - 'a'\n"
        "User - 'ann':DefaultAccount='a':Partition='cpu'\n"
        "User - 'ann':DefaultAccount='a':Partition='gpu'\n"
    )
    result = ledger_store.run("import-slurm", str(dump), expect=1)
    assert result.stderr == (
        "fairledger: dump line 6: user 'ann' has another association in account 'a' (line 5,"
        " partition cpu); the ledger holds one per (user, account)\n"
    )


def test_without_a_ledger_nothing_is_created(store: Store) -> None:
    result = store.run("import-slurm", str(SLURM / "site.cfg"), expect=1, now=T0)
    assert "run 'fairledger create-db' first" in result.stderr


def test_a_default_account_must_be_one_of_the_users(ledger_store: Store, tmp_path: Path) -> None:
    dump = tmp_path / "default.cfg"
    dump.write_text(
        "Cluster - 'tux'\nParent - 'root'\nAccount - 'a'\nAccount - 'b'\nParent - 'a'\n"
        "User - 'ann':DefaultAccount='b'\n"
    )
    position = ledger_store.log_position()
    result = ledger_store.run("import-slurm", str(dump), expect=1)
    assert result.stderr == (
        "fairledger: dump line 6: user ann: DefaultAccount b: user ann has no active association"
        " in bank b\n"
    )
    assert ledger_store.log_position() == position

"""Banks through the CLI, on both stores: golden layouts, rules, errors."""

from __future__ import annotations

import json
import re

from tests.cli.sites import build_flux_account_site, build_weighted_tree_site
from tests.conftest import DATA, Store, refusal


def golden(*parts: str) -> str:
    return DATA.joinpath(*parts).read_text()


def without_usage(text: str, parsable: bool) -> str:
    """The vector's layout with RawUsage 0.0 and Fairshare 0.5: what a site shows before any
    usage. Only the two value columns change; widths and order stay the vector's."""
    out = []
    for i, line in enumerate(text.splitlines()):
        if i == 0 or not line:
            out.append(line)
            continue
        if parsable:
            cells = line.split("|")
            cells[4] = "0.0"
            if len(cells) == 6:
                cells[5] = "0.5"
            out.append("|".join(cells))
        else:
            head, fairshare = line[:80], line[100:]
            out.append(head + "0.0".rjust(20) + ("0.5".rjust(20) if fairshare.strip() else ""))
    return "\n".join(out) + "\n"


def test_tree_layout_matches_flux_accounting_before_usage(ledger_store: Store) -> None:
    build_weighted_tree_site(ledger_store, "small_no_tie")
    tree = ledger_store.run("view-bank", "root", "-t").stdout
    assert tree == without_usage(golden("print_hierarchy", "small_no_tie.txt"), False)
    parsable = ledger_store.run("view-bank", "root", "-t", "-P").stdout
    assert parsable == without_usage(golden("print_hierarchy", "small_no_tie_parsable.txt"), True)


def test_flux_account_goldens(ledger_store: Store) -> None:
    build_flux_account_site(ledger_store)
    assert ledger_store.run("view-bank", "root", "--tree").stdout == golden(
        "flux_account", "full_hierarchy.expected"
    )
    assert ledger_store.run("view-bank", "D", "-t").stdout == golden(
        "flux_account", "D_bank.expected"
    )
    assert ledger_store.run("view-bank", "F", "-t").stdout == golden(
        "flux_account", "F_bank_tree.expected"
    )
    assert ledger_store.run("view-bank", "A", "-u").stdout == golden(
        "flux_account", "A_bank.expected"
    )
    assert ledger_store.run("view-bank", "F", "--users").stdout == golden(
        "flux_account", "F_bank_users.expected"
    )
    for user in ("user5030", "user5031"):
        ledger_store.run("add-user", "-u", user, "-i", user[4:], "-B", "E")
    assert ledger_store.run("view-bank", "E", "-t").stdout == golden(
        "flux_account", "E_bank.expected"
    )


def test_view_bank_prints_flux_accountings_json_by_default(ledger_store: Store) -> None:
    """t1023: `view-bank root` is its root_bank.expected, byte for byte; --json is the same."""
    ledger_store.run("add-bank", "root", "1")
    expected = golden("flux_account", "root_bank.expected")
    assert ledger_store.run("view-bank", "root").stdout == expected
    assert ledger_store.run("view-bank", "root", "--json").stdout == expected


def test_list_banks_formats(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "physics", "7", "--parent-bank", "root", "--priority", "2.5")
    out = ledger_store.run("list-banks", "-o", "{bank:<10}|{shares}").stdout
    assert out == "bank      |shares\nroot      |1\nphysics   |7\n"
    out = ledger_store.run("list-banks", "--fields", "bank,priority", "--json").stdout
    assert json.loads(out) == [
        {"bank": "root", "priority": 0.0},
        {"bank": "physics", "priority": 2.5},
    ]
    bad = ledger_store.run("list-banks", "--fields", "bank,nope", expect=1)
    assert (
        bad.stderr.strip() == "fairledger: list-banks: ValueError: invalid fields: nope "
        "(available: bank_id, bank, "
        "active, parent_bank, shares, job_usage, priority, ignore_older_than)"
    )
    bad = ledger_store.run("list-banks", "-o", "{nope}", expect=1)
    assert "Invalid column name in format string: nope" in bad.stderr


def test_delete_bank_force_and_reactivation_reach_the_read_models(ledger_store: Store) -> None:
    """Which banks and associations a deletion takes, and where default banks move, are the
    Site's rules (tests/unit/test_site_banks.py); here, that the tables show it."""
    build_flux_account_site(ledger_store, with_e_users=True)
    ledger_store.run("add-user", "-u", "user5011", "-B", "E")  # a second bank for user5011
    ledger_store.run("delete-bank", "A", "--reason", "group left")
    rows = json.loads(ledger_store.run("list-banks", "--inactive", "--json").stdout)
    assert {r["bank"]: r["active"] for r in rows}["A"] == 0
    users = json.loads(ledger_store.run("list-users", "--json").stdout)
    states = {(u["username"], u["bank"]): (u["active"], u["default_bank"]) for u in users}
    assert states[("user5011", "A")] == (0, "E")  # default moved to the remaining association
    assert states[("user5011", "E")] == (1, "E")
    assert states[("user5012", "A")] == (0, "A")  # no other association: default kept
    ledger_store.run("delete-bank", "D")
    active = json.loads(ledger_store.run("list-banks", "--json").stdout)
    assert [r["bank"] for r in active] == ["root", "B", "C"]
    tree = ledger_store.run("view-bank", "root", "-t", "-A").stdout
    # -A hides inactive associations only; every bank stays, as flux-accounting prints it.
    assert " D " in tree and "user5030" not in tree
    assert "false" in ledger_store.run("view-bank", "root", "-t").stdout
    ledger_store.run("delete-bank", "D", "--force")
    banks = json.loads(ledger_store.run("list-banks", "--inactive", "--json").stdout)
    assert [b["bank"] for b in banks] == ["root", "A", "B", "C"]
    assert "user5030" not in ledger_store.run("list-users").stdout
    ledger_store.run("add-bank", "A", "40", "--parent-bank", "root", "--priority", "3")
    (row,) = json.loads(ledger_store.run("view-bank", "A", "--json").stdout)
    assert (row["active"], row["shares"], row["priority"]) == (1, 40, 3.0)


def test_edit_bank_moves_and_refuses_in_one_line(ledger_store: Store) -> None:
    build_flux_account_site(ledger_store)
    ledger_store.run("edit-bank", "F", "--parent-bank", "root", "--shares", "5")
    (row,) = json.loads(ledger_store.run("view-bank", "F").stdout)
    assert (row["parent_bank"], row["shares"]) == ("root", 5)
    before = ledger_store.log_position()
    result = ledger_store.run("edit-bank", "D", "--parent-bank", "E", expect=1)
    assert result.stderr == refusal(
        "edit-bank", "moving bank D under E would make a cycle in the bank tree"
    )
    assert result.stdout == ""
    assert ledger_store.log_position() == before


def test_bank_refusals_are_one_line_and_write_nothing(ledger_store: Store) -> None:
    """One refusal per command: the rules themselves are tests/unit/test_site_banks.py's."""
    build_flux_account_site(ledger_store)
    before = ledger_store.log_position()
    cases = {
        ("add-bank", "A", "1", "--parent-bank", "root"): "bank A already exists",
        ("delete-bank", "nope"): "bank nope not found in bank_table",
        ("view-bank", "nope"): "bank nope not found in bank_table",
    }
    for args, message in cases.items():
        result = ledger_store.run(*args, expect=1)
        kind = "IntegrityError" if "already exists" in message else "ValueError"
        assert result.stderr == refusal(args[0], message, kind), args
        assert result.stdout == ""
    assert ledger_store.log_position() == before


def test_malformed_command_lines_are_usage_errors(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    before = ledger_store.log_position()
    # argparse's words, as flux-accounting's add-bank/list-banks/edit-bank print them.
    for args, last_line in [
        (
            ("add-bank", "A", "many"),
            "fairledger add-bank: error: argument shares: invalid int value: 'many'",
        ),
        (
            ("list-banks", "--colour", "red"),
            "fairledger list-banks: error: unrecognized arguments: --colour red",
        ),
        (
            ("add-bank", "A", "1", "--colour", "red"),
            "fairledger add-bank: error: unrecognized arguments: --colour red",
        ),
        (
            ("edit-bank", "root", "--priority", "high"),
            "fairledger edit-bank: error: argument --priority: invalid float value: 'high'",
        ),
    ]:
        result = ledger_store.run(*args, expect=2)
        assert result.stderr.endswith(f"\n{last_line}\n"), result.stderr
        assert "Traceback" not in result.stderr + result.stdout
    assert ledger_store.log_position() == before
    assert re.search(
        r"Usage: fairledger add-bank", ledger_store.run("add-bank", "A", "x", expect=2).stderr
    )

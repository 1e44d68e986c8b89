"""fairshare-emulate: flux-accounting's what-if fair-share, from its export-db -F files (its
t1098 inputs and expected outputs) and from the ledger, recording nothing; both stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.sites import read_weighted_tree
from tests.cli.test_fairshare_vectors import UPDATE_AT, build
from tests.conftest import DATA, Store, refusal


def export_tree(name: str) -> dict[str, Any]:
    """A weighted_tree CSV in export-db -F's JSON layout (the input t1098 writes by hand)."""
    stack: list[dict[str, Any]] = []
    root: dict[str, Any] = {}
    for depth, bank, user, shares, usage in read_weighted_tree(name):
        if user == "%^+_nouser":
            node: dict[str, Any] = {"bank": bank, "shares": shares, "usage": usage}
            node["children"] = []
            del stack[depth:]
            if stack:
                stack[-1]["children"].append(node)
            else:
                root = node
            stack.append(node)
        else:
            del stack[depth:]
            stack[-1]["children"].append({"username": user, "shares": shares, "usage": usage})
    return {"root": root}


def write_tree(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(export_tree(name)))
    return str(path)


# t1098's expected "-o '{username},{fairshare}'" outputs.
T1098 = {
    "small_no_tie": [
        "leaf.3.1,1.0",
        "leaf.3.2,0.857143",
        "leaf.2.1,0.714286",
        "leaf.2.2,0.571429",
        "leaf.1.3,0.428571",
        "leaf.1.1,0.285714",
        "leaf.1.2,0.142857",
    ],
    "small_tie": [
        "leaf.3.1,1.0",
        "leaf.3.2,0.875",
        "leaf.1.3,0.75",
        "leaf.2.3,0.75",
        "leaf.1.2,0.5",
        "leaf.2.2,0.5",
        "leaf.1.1,0.5",
        "leaf.2.1,0.5",
    ],
}


@pytest.mark.parametrize("name", sorted(T1098))
def test_file_as_t1098(store: Store, tmp_path: Path, name: str) -> None:
    path = write_tree(tmp_path, name)
    out = store.run("fairshare-emulate", "-i", path, "-o", "{username},{fairshare}").stdout
    assert out.splitlines() == T1098[name]


def test_json_byte_for_byte_and_parsable(store: Store, tmp_path: Path) -> None:
    path = write_tree(tmp_path, "small_tie_all")
    expected = (DATA / "fairshare_emulate" / "small_tie_all_json.expected").read_text()
    assert store.run("fairshare-emulate", "-i", path, "--json").stdout == expected
    assert store.run("fairshare-emulate", "-i", path, "-P").stdout.splitlines() == [
        "leaf.1.3|account1|100000|10|1.0",
        "leaf.2.3|account2|100000|1|1.0",
        "leaf.3.3|account3|100000|100|1.0",
        "leaf.1.2|account1|1000|10|0.666667",
        "leaf.2.2|account2|1000|1|0.666667",
        "leaf.3.2|account3|1000|100|0.666667",
        "leaf.1.1|account1|10000|100|0.666667",
        "leaf.2.1|account2|10000|10|0.666667",
        "leaf.3.1|account3|10000|1000|0.666667",
    ]


def test_a_user_beside_banks_ranks_as_update_fshare_does(store: Store, tmp_path: Path) -> None:
    # flux-accounting's Python emulator gives leaf.0.1 0.166667 here; its C++ update-fshare,
    # and we, 0.666667 (the user ties with account1 and goes first).
    path = write_tree(tmp_path, "small_tie_diff_type")
    out = store.run("fairshare-emulate", "-i", path, "-P").stdout
    assert "leaf.0.1|root|100|12|0.666667" in out.splitlines()


def test_table(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    tree = {"bank": "root", "children": [{"bank": "A", "children": [{"username": "u1"}]}]}
    tree["children"][0]["children"].append({"username": "user.two", "shares": 3, "usage": 2.345})
    path.write_text(json.dumps({"root": tree}))
    assert store.run("fairshare-emulate", "-i", str(path)).stdout == (
        "Username | Bank | Shares | Usage | FairShare\n"
        "---------+------+--------+-------+----------\n"
        "u1       | A    | 1      | 0     | 1.0      \n"  # missing shares 1, usage 0
        "user.two | A    | 3      | 2.35  | 0.5      \n"
    )


def test_what_if_from_the_ledger_records_nothing(store: Store) -> None:
    build(store, "small_no_tie")
    before = store.log_position()
    # flux-accounting's update_fshare vector: leaf.2.1's usage 8 -> 55.
    post = [
        "leaf.3.1,1.0",
        "leaf.3.2,0.857143",
        "leaf.1.3,0.714286",
        "leaf.1.1,0.571429",
        "leaf.1.2,0.428571",
        "leaf.2.2,0.285714",
        "leaf.2.1,0.142857",
    ]
    fmt = ("-o", "{username},{fairshare}")
    for change in (("--set-usage", "leaf.2.1", "account2", "55"),):
        out = store.run("fairshare-emulate", *change, *fmt, now=UPDATE_AT).stdout
        assert out.splitlines() == post
    added = ("--add-usage", "leaf.2.1", "account2", "47")
    assert store.run("fairshare-emulate", *added, *fmt, now=UPDATE_AT).stdout.splitlines() == post
    unchanged = store.run("fairshare-emulate", *fmt, now=UPDATE_AT).stdout.splitlines()
    assert unchanged == T1098["small_no_tie"]
    assert store.log_position() == before
    stored = json.loads(store.run("list-users", "--json", now=UPDATE_AT).stdout)
    assert {r["username"]: r["fairshare"] for r in stored}["leaf.2.1"] == 0.714286


def test_as_of_the_ledger(store: Store) -> None:
    build(store, "small_no_tie")
    # Before any job was recorded every user had used nothing: all tie at 1.0.
    out = store.run(
        "fairshare-emulate", "-o", "{fairshare}", "--as-of", "1700000000", now=UPDATE_AT
    )
    assert out.stdout.splitlines() == ["1.0"] * 7
    assert "as of 2023-11-14T22:13:20+00:00" in out.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["-i", "nope.json"],
            1,
            refusal("fairshare-emulate", "input file not found: nope.json", "FileNotFoundError"),
        ),
        (["-i", "."], 1, refusal("fairshare-emulate", "input file is a directory: .")),
        (["--set-usage", "nobody", "A", "1"], 1, "no association (nobody, A) in the tree"),
        (["--set-usage", "leaf.1.1", "account1", "x"], 2, "'x' is not a number"),
        (["--add-usage", "leaf.1.1", "account1", "-1000"], 1, "would be -900"),
        (
            ["-o", "{username},{nope}"],
            1,
            refusal("fairshare-emulate", "Invalid format string key: 'nope'"),
        ),
        (["-o", "{fairshare:d}"], 1, "invalid format string '{fairshare:d}'"),
        (["-i", "x.json", "--as-of", "1d"], 2, "cannot be combined with -i/--input"),
    ],
)
def test_errors(store: Store, args: list[str], code: int, message: str) -> None:
    build(store, "small_no_tie")
    result = store.run("fairshare-emulate", *args, now=UPDATE_AT, expect=code)
    assert result.stdout == ""
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{ this sure is bad JSON }", "invalid JSON in input file: Expecting property name"),
        ('{"tree": {}}', "JSON must contain 'root' key"),
        ('{"root": {"shares": 1}}', "Node must have 'username' or 'bank' key"),
        ('{"root": {"bank": "r", "children": []}}', "no users found in input"),
        ('{"root": {"bank": "r", "children": [{"username": "u", "shares": -1}]}}', "shares of"),
        ('{"root": {"bank": "r", "children": [{"username": "u", "usage": "1"}]}}', "usage of"),
    ],
)
def test_bad_files(store: Store, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = store.run("fairshare-emulate", "-i", str(path), expect=1)
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_non_utf8_file(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"root": {"bank": "\xe9"}}')
    result = store.run("fairshare-emulate", "-i", str(path), expect=1)
    assert "is not UTF-8" in result.stderr

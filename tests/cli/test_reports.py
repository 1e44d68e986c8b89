"""report fairshare-history on both stores: an association at every fair-share snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.store.application import Ledger
from ledger.store.connections import Connection, parse_store_url
from projections.queries.as_of import marker_at_position, recompute
from tests.cli.test_explain import LATER, explain, history, job, lines
from tests.conftest import T0, Store

S1_TIME = "2023-11-14T22:15:50+00:00"  # T0 + 150
S2_TIME = "2023-11-14T22:17:30+00:00"  # T0 + 250
S3_TIME = "2023-11-14T22:19:10+00:00"  # T0 + 350


def report(store: Store, *args: str) -> list[dict[str, Any]]:
    out = store.run("report", "fairshare-history", *args, "--json", now=LATER)
    return json.loads(out.stdout)


def rows(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (r["time"], r["position"], r["job_usage"], r["fairshare"], r["rank"], r["of"])
        for r in found
    ]


def test_values_at_each_snapshot(store: Store) -> None:
    at = history(store)
    s1, s2 = at["s1"], at["s2"]
    assert rows(report(store, "--user", "alice")) == [
        (S1_TIME, s1, 62.0, 0.333333, 1, 3),
        (S2_TIME, s2, 70.5, 1.0, 3, 3),
    ]
    assert rows(report(store, "--user", "bob", "--bank", "B")) == [
        (S1_TIME, s1, 5.0, 0.666667, 2, 3),
        (S2_TIME, s2, 2.5, 0.333333, 1, 3),
    ]
    assert rows(report(store, "--user", "carol")) == [
        (S1_TIME, s1, 0.0, 1.0, 3, 3),
        (S2_TIME, s2, 0.0, 0.666667, 2, 3),
    ]
    first = report(store, "--user", "alice")[0]
    assert (first["at"], first["active"]) == (T0 + 150.0, True)
    # The range is inclusive at both ends; ISO times work too.
    assert rows(report(store, "--user", "alice", "--from", str(T0 + 250))) == [
        (S2_TIME, s2, 70.5, 1.0, 3, 3)
    ]
    assert rows(report(store, "--user", "alice", "--to", S1_TIME)) == [
        (S1_TIME, s1, 62.0, 0.333333, 1, 3)
    ]
    # dave's association is newer than every snapshot.
    assert report(store, "--user", "dave") == []

    table = store.run("report", "fairshare-history", "--user", "alice", now=LATER).stdout
    assert table.splitlines() == [
        "time                      | position | job_usage | fairshare | rank  ",
        "--------------------------+----------+-----------+-----------+-------",
        f"{S1_TIME} | {s1:<8} | 62.0      | 0.333333  | 1 of 3",
        f"{S2_TIME} | {s2:<8} | 70.5      | 1.0       | 3 of 3",
    ]

    # Each row (read from the marker's checkpoint) is what the walk gives when it is done again
    # from the jobs at that marker, and its usage is what `list-users --as-of` shows then.
    found = report(store, "--user", "bob")
    ledger = Ledger(parse_store_url(store.url))
    conn = Connection(parse_store_url(store.url))
    try:
        for row in found:
            again = recompute(ledger, conn, marker_at_position(conn, row["position"]))
            assert again.shares[("bob", "B")] == row["fairshare"]
            assert again.usage[("bob", "B")].usage == row["job_usage"]
    finally:
        conn.close()
        ledger.close()
    for row in found:
        users = store.run("list-users", "--json", "--as-of", str(row["at"]), now=LATER).stdout
        bob = next(u for u in json.loads(users) if u["username"] == "bob")
        assert (bob["job_usage"], bob["fairshare"]) == (row["job_usage"], row["fairshare"])


def test_inactive_association_keeps_its_last_value(store: Store) -> None:
    at = history(store)
    store.run("delete-user", "carol", "B", now=T0 + 300)
    store.run("update-fshare", now=T0 + 350)
    s3 = store.log_position()
    store.run("ingest", "-", input=lines(job(11, "carol", 360, 370, 5, bank="B")), now=T0 + 380)
    found = report(store, "--user", "carol")
    assert rows(found) == [
        (S1_TIME, at["s1"], 0.0, 1.0, 3, 3),
        (S2_TIME, at["s2"], 0.0, 0.666667, 2, 3),
        (S3_TIME, s3, 0.0, 0.666667, None, 3),  # left out of the walk: kept S2's value
    ]
    assert [r["active"] for r in found] == [True, True, False]
    live = json.loads(store.run("list-users", "--json", now=LATER).stdout)
    assert next(u["fairshare"] for u in live if u["username"] == "carol") == 0.666667
    table = store.run("report", "fairshare-history", "--user", "carol", now=LATER).stdout
    assert table.splitlines()[-1].endswith("| - of 3 (inactive)")

    # A job carol submitted while inactive: the value kept from S2.
    kept = explain(store, "11")
    assert kept["active"] is False
    assert kept["snapshot"]["position"] == s3
    assert kept["fairshare_from"]["position"] == at["s2"]
    assert (kept["fairshare"], kept["rank"], kept["ranked"], kept["priority"]) == (
        0.666667,
        2,
        3,
        66667,
    )
    text = store.run("explain-job", "11", now=LATER).stdout
    assert f"left carol/B out (inactive); it kept the value of the snapshot of {S2_TIME}" in text


def test_plot_empty_range_and_errors(store: Store, tmp_path: Path) -> None:
    history(store)
    chart = tmp_path / "alice.png"
    out = store.run(
        "report", "fairshare-history", "--user", "alice", "--plot", str(chart), now=LATER
    )
    assert out.stderr == f"wrote {chart}\n"
    data = chart.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000

    empty = store.run(
        "report", "fairshare-history", "--user", "alice", "--to", str(T0 + 100), now=LATER
    )
    assert empty.stderr == (
        "no fair-share snapshot of alice/A from the start to 2023-11-14T22:15:00+00:00\n"
    )
    assert empty.stdout.splitlines()[0].split(" | ")[0].strip() == "time"
    assert len(empty.stdout.splitlines()) == 2  # header and rule only
    none = tmp_path / "none.png"
    quiet = store.run(
        "report",
        "fairshare-history",
        "--user",
        "alice",
        "--from",
        str(T0 + 260),
        "--json",
        "--plot",
        str(none),
        now=LATER,
    )
    assert json.loads(quiet.stdout) == [] and not none.exists()

    assert store.run(
        "report", "fairshare-history", "--user", "zed", now=LATER, expect=1
    ).stderr == ("fairledger: user zed not found in association_table\n")
    assert store.run(
        "report", "fairshare-history", "--user", "bob", "--bank", "A", now=LATER, expect=1
    ).stderr == ("fairledger: user bob not found in bank A\n")
    store.run(
        "report",
        "fairshare-history",
        "--user",
        "bob",
        "--from",
        str(T0 + 300),
        "--to",
        str(T0 + 200),
        now=LATER,
        expect=2,
    )
    store.run(
        "report",
        "fairshare-history",
        "--user",
        "bob",
        "--plot",
        str(tmp_path / "missing" / "x.png"),
        now=LATER,
        expect=1,
    )

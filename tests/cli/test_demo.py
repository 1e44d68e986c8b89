"""`fairledger demo` builds, runs and prints a small site (what `make demo` shows)."""

from __future__ import annotations

import json

from tests.conftest import T0, Store


def test_demo_builds_a_site_with_usage_and_fairshare(store: Store) -> None:
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

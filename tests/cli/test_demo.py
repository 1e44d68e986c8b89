"""`fairledger demo` builds, runs and prints a small site (what `make demo` shows)."""

from __future__ import annotations

import json

from tests.conftest import T0, Store


def test_demo_builds_a_site_with_usage_and_fairshare(store: Store) -> None:
    out = store.run("demo", "--weeks", "2", now=T0).stdout
    assert "recorded 1500, duplicate 0, unmatched 0" in out
    tree = out[out.index("Bank "):]
    assert tree.splitlines()[1].startswith("root ")
    rows = json.loads(store.run("list-users", "--json", now=T0).stdout)
    assert len(rows) == 12
    assert all(r["job_usage"] > 0 for r in rows)
    assert max(r["fairshare"] for r in rows) == 1.0
    assert len({r["fairshare"] for r in rows}) > 1
    assert store.run("demo", now=T0, expect=1).stderr.startswith(
        "fairledger: a ledger already exists")

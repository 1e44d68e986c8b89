"""A Slurm site's job IDs are shown as Slurm writes them (decimal), a Flux site's as Flux's F58."""

from __future__ import annotations

import json

from tests.builders import job_line
from tests.conftest import T0, Store


def test_view_job_records_shows_each_schedulers_form(ledger_store: Store) -> None:
    s = ledger_store
    s.run("add-bank", "root", "1", now=T0 + 10)
    s.run("add-user", "--username", "u", "--userid", "7", "--bank", "root", now=T0 + 10)
    job = job_line(123456, user="u", bank="root", end=T0 + 15, seconds=5)
    s.run("ingest", "-", input=job + "\n", now=T0 + 16)
    flux = json.loads(s.run("view-job-records", "--json", now=T0 + 20).stdout)
    # 123456 = 36·58² + 40·58 + 32: digits d, h and Z of Flux's base58 alphabet
    assert flux[0]["jobid"] == "ƒdhZ"
    s.run("edit-config", "fairshare_algorithm=fair-tree", now=T0 + 30)
    slurm = json.loads(s.run("view-job-records", "--json", now=T0 + 40).stdout)
    assert slurm[0]["jobid"] == "123456"
    # The default listing too (it printed the F58 form, whatever the site).
    listed = s.run("view-job-records", now=T0 + 40).stdout.splitlines()
    assert listed[1].split(" | ")[0].strip() == "123456"

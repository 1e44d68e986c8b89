"""Adapters for Slurm's text formats: pure parsing, text in, validated records out.

* `ledger.slurm.sacct`: `sacct -a -X -P --format=...` job lines; `ledger.slurm.sacct_jobs`:
  its ended jobs as ingest records (`ingest --format sacct`).
* `ledger.slurm.dump`: `sacctmgr dump` flat files (accounts, users, shares).
* `ledger.slurm.sshare`: `sshare -a -l -P` / `-p` / `-o ...` RawUsage per association.
* `ledger.slurm.tres`: TRES strings (`cpu=8,mem=16G,gres/gpu=2`) as sacct prints them.
* `ledger.slurm.conf`: slurm.conf's priority, fair-share and partition settings.

No I/O: every parser takes the text (a str) and the values it needs (time zone...). Errors are
`ledger.errors.InvalidValue` with one line per offending input line, naming the line number and
the bad value. docs/slurm-formats.md says what is read, what is ignored, and where we differ.
"""

#!/usr/bin/env bash
# How tests/data/ledgers/every-event-0.2.db was made (before the modules moved): every event
# type the ledger records, in one SQLite ledger. Run from the repository root with its venv.
set -euo pipefail
OUT=${1:?output path}
F="fairledger --db sqlite:///$OUT"
rm -f "$OUT" "$OUT"-wal "$OUT"-shm
$F --now 1700000000 import-flux-accounting tests/data/test_dbs/FluxAccountingv0-60-0.db --reason "moving in" >/dev/null
$F --now 1700000100 edit-config priority_decay_half_life=2w --reason "slower decay"
$F --now 1700000110 edit-factor --factor fairshare --weight 90000
$F --now 1700000120 add-bank physics 10 --parent-bank root --reason "new group"
$F --now 1700000130 edit-bank physics --shares 20
$F --now 1700000140 add-queue batch --priority 100
$F --now 1700000150 edit-queue batch --priority 200
$F --now 1700000160 add-project proj1
$F --now 1700000170 add-user --username zed --bank physics --shares 3 --queues batch --projects proj1
$F --now 1700000180 edit-user zed --bank physics --shares 4
$F --now 1700000190 add-bank chem 5 --parent-bank root
$F --now 1700000200 add-user --username zed --bank chem
$F --now 1700000210 edit-user zed --default-bank chem
$F --now 1700000220 delete-user zed physics
$F --now 1700000230 add-user --username zed --bank physics
$F --now 1700000240 delete-bank chem --force
$F --now 1700000250 add-bank old 1 --parent-bank root
$F --now 1700000260 delete-bank old
$F --now 1700000270 add-bank old 1 --parent-bank root
printf '%s\n' '{"id": 900001, "username": "zed", "bank": "physics", "queue": "batch", "t_submit": 1700000000, "t_run": 1700000010, "t_inactive": 1700000250, "nnodes": 1, "ncores": 4}' > /tmp/every-event-jobs.jsonl
$F --now 1700000280 ingest /tmp/every-event-jobs.jsonl
$F --now 1700000290 update-usage
$F --now 1700000300 update-fshare
$F --now 1700000310 clear-usage physics
$F --now 1700000320 add-user --username yves --bank physics
$F --now 1700000330 delete-user yves physics --force
$F --now 1700000340 delete-queue batch
$F --now 1700000350 delete-project proj1
$F --now 1700000360 update-fshare

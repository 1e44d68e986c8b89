"""Failed steps whose class the shim's notes cannot tell, keyed by (script, step number) as of
flux-accounting 0.60+ (HEAD 9546e250 and later merges; a newer checkout may renumber them).

AFTER_FLUX: the step itself runs only fairledger, but what it checks was made by an earlier step
that needed a running Flux (jobs submitted and fetched, the plugin's state): with no jobs, a
listing or a usage value it greps for cannot be there. DELIBERATE: a difference docs/semantics.md
states, or a step that checks what an earlier step wrote into flux-accounting's own tables.
DELIBERATE_SCRIPTS: every failed step of the script that ran no Flux command.
"""

from __future__ import annotations


def _steps(script: str, numbers: range | list[int], why: str) -> dict[tuple[str, int], str]:
    return {(script, number): why for number in numbers}


_JOBS = "checks job records or usage of jobs submitted and fetched through Flux"
_TABLES = "checks values an earlier step wrote straight into flux-accounting's tables"

AFTER_FLUX: dict[tuple[str, int], str] = {
    **_steps("t1011-job-archive-interface", [19, 23, 24, 27], _JOBS),
    **_steps("t1041-view-jobs-by-project", [12, 13, 14], _JOBS),
    **_steps("t1046-issue565", range(10, 18), _JOBS),
    **_steps("t1047-issue564", [10], _JOBS),
    **_steps("t1064-store-job-duration", [12, 13, 18, 19], _JOBS),
    **_steps("t1065-view-jobs-by-duration", [20, 21, 22, 23, 25, 27, 28, 29], _JOBS),
    **_steps("t1069-duration-delta", [17, 18, 19, 20], _JOBS),
    **_steps("t1081-view-job-records-jobid-formats", [11, 12], _JOBS),
}

DELIBERATE_SCRIPTS: dict[str, str] = {
    "t1017-update-db": "flux-accounting's schema migration of its own old databases (each step "
    "runs account-update-db or a command on the database it migrated); fairledger reads every "
    "schema version through import-flux-accounting instead",
}

DELIBERATE: dict[tuple[str, int], str] = {
    # t1006: the database is made by flux-accounting's own Python package (create_test_db.py)
    # and its usage column edited in place; fairledger reads such a file only through
    # import-flux-accounting.
    **_steps("t1006-update-fshare", [5, 6, 7, 8, 10, 11, 12, 13], _TABLES),
    **_steps("t1036-hierarchy-small-no-tie-db", [5, 6], _TABLES),
    **_steps("t1037-hierarchy-small-tie-db", [5, 6], _TABLES),
    **_steps("t1038-hierarchy-small-tie-all-db", [5, 6], _TABLES),
    **_steps("t1053-issue631", range(13, 19), _TABLES),
    **_steps("t1058-flux-account-visuals", range(10, 14), _TABLES),
    **_steps("t1072-sync-uids", [7, 8, 10, 11, 12], _TABLES + " (job_usage_factor_table)"),
    **_steps("t1075-custom-usage-reporting", [8, 9, 10, *range(12, 29)], _TABLES + " (jobs)"),
    **_steps("t1089-update-fshare-large-usage", [8], _TABLES),
    **_steps(
        "t1061-flux-account-edit-all-users",
        [10, 21],
        "edit-all-users --bank is refused: flux-accounting's UPDATE without a WHERE moves every "
        "association into one bank (docs/semantics.md)",
    ),
    ("t1061-flux-account-edit-all-users", 11): "edit-all-users --default-bank B is refused "
    "unless every user has an active association in B (docs/semantics.md)",
    ("t1023-flux-account-banks", 16): "shares 0 is allowed (docs/semantics.md), so the refusal "
    "of -1000 says `must be >= 0` where flux-accounting says `new shares amount must be > 0`",
    ("t1099-export-db-fairshare", 8): "fairshare-emulate runs update-fshare's weighted walk "
    "(user3, alone under a bank tied with two users' banks, gets 1/3 as the C++ gives); "
    "flux-accounting's Python emulator flattens the tie and gives 1.0 (docs/semantics.md)",
    **_steps(
        "t1079-issue809",
        [6, 7],
        "a bank holds users and sub-banks together on every algorithm (issue 13; the weighted "
        "walk weighs them as siblings), where flux-accounting refuses both (docs/semantics.md)",
    ),
    ("t1096-flux-account-bank-info", 18): "not a difference: the step greps that the tree has no "
    "line naming the user running it, and the runner ran as `root`, the root bank's name",
}

"""Every command's name, the module under cli/ that holds it, and the one line `fairledger
--help` shows for it: the group imports a command's module only when that command runs (each
pulls in the ledger's heavier modules), so the list must be known without importing them.
tests/cli/test_startup.py checks this table against the commands themselves: same names, same
lines."""

from __future__ import annotations

# name: (module under cli/, short help as click derives it from the command's docstring)
INDEX: dict[str, tuple[str, str]] = {
    "list-qos": ("qos", "List QOS."),
    "view-qos": ("qos", "Show QOS (JSON; a table with --parsable)."),
    "delete-qos": ("qos", "Remove QOS (refused while an association lists it)."),
    "edit-qos": (
        "qos",
        "Edit QOS; jobs already recorded keep the usage factor they were charged with.",
    ),
    "add-qos": ("qos", "Add the QOS named QOS (Slurm's quality of service)."),
    "add-bank": ("banks", "Add BANK with SHARES under --parent-bank (or reactivate it)."),
    "add-config": (
        "settings",
        "Add a config key of the site's own (the core keys always exist: use edit-config).",
    ),
    "add-project": ("projects", "Add PROJECT."),
    "add-queue": (
        "queues",
        "Add QUEUE with its limits, priority, billing weights and Slurm partition fields.",
    ),
    "add-user": (
        "users",
        "Add an association (USERNAME in BANK), or reactivate it with the values given.",
    ),
    "bank-info": (
        "bank_info",
        "Normalised shares, usage and fair-share of banks and users (default: your own "
        "associations, up to the root).",
    ),
    "check-job": (
        "priority",
        "Would the plugin accept, hold or reject this job? Exit 0 accepted, 3 held, 4 rejected.",
    ),
    "clear-usage": (
        "usage",
        "Stop counting the past jobs of every association under BANK (recursively).",
    ),
    "create-db": ("admin", "Create a new, empty ledger at --db."),
    "cron": (
        "cron",
        "Ingest new jobs, update usage and fair-share, and write the scheduler's config: ingest, "
        "update-usage, update-fshare and export-json in one process.",
    ),
    "delete-bank": (
        "banks",
        "Deactivate BANK, its sub-banks and their associations (or remove them with --force).",
    ),
    "delete-config": (
        "settings",
        "Delete a key add-config added (the core keys cannot be deleted).",
    ),
    "delete-project": ("projects", "Remove PROJECT."),
    "delete-queue": ("queues", "Remove QUEUE."),
    "delete-user": ("users", "Deactivate USERNAME's association in BANK (remove it with --force)."),
    "demo": (
        "demo",
        "Build a small site on a new ledger, run its weekly accounting over generated jobs "
        "(ingest, update-fshare, an allocation change), and show the tree today and a week "
        "ago, and one association's history.",
    ),
    "diff": (
        "audit",
        "What changed between two moments: banks, associations, queues, projects, factors, "
        "config, and fair-share values and ranks.",
    ),
    "doctor": ("admin", "Name the events of the log its read models cannot apply (exit 1 if any)."),
    "edit-all-users": (
        "maintenance",
        "Edit every association at once; -1 or 'unlimited' resets a field to its default.",
    ),
    "edit-bank": ("banks", "Edit BANK's shares, parent, priority or usage cutoff."),
    "edit-config": (
        "settings",
        "Change config keys (weights, half-life, reset period, decay factor, "
        "deny_unknown_queues, timezone).",
    ),
    "edit-factor": ("settings", "Set a priority factor's weight."),
    "edit-queue": (
        "queues",
        "Edit QUEUE; -1 resets a limit to its default (priority takes any integer).",
    ),
    "edit-user": (
        "users",
        "Edit USERNAME's associations; -1 or 'unlimited' resets a field to its default.",
    ),
    "explain-job": (
        "reports",
        "The priority recorded job JOBID had at its submission time, factor by factor, and "
        "the usage behind the fair-share it was given.",
    ),
    "export-db": (
        "migrate",
        "Write one CSV file per table (bank_table.csv, association_table.csv, "
        "queue_table.csv, project_table.csv, priority_factor_weight_table.csv, "
        "config_table.csv) in flux-accounting's column layout, for its pop-db or ours; with "
        "-F, print the tree as JSON instead.",
    ),
    "export-json": (
        "priority",
        "The config Flux's mf_priority plugin loads: flux jobtap load mf_priority.so "
        '"config=$(fairledger export-json)".',
    ),
    "export-payloads": (
        "priority",
        "The priority-update RPC payloads (rec_update, rec_q_update, ...), as sent.",
    ),
    "fairshare-emulate": (
        "fairshare_emulate",
        "Fair-share of every association as update-fshare would compute it with some usage "
        "changed: nothing is recorded.",
    ),
    "fetch-job-records": (
        "fetch",
        "Record the jobs a running Flux instance finished since the last fetch.",
    ),
    "grant": (
        "admin",
        "PostgreSQL: make each ROLE a member of this schema's reader, writer or admin group "
        "(fairledger_<schema>_reader|writer|admin, created if missing) and give the groups "
        "their privileges.",
    ),
    "history": (
        "audit",
        "Who changed what, when and why: one line per event, old → new, in log order.",
    ),
    "import-flux-accounting": (
        "migrate",
        "Bring a flux-accounting site over from its database PATH.db (any schema version): "
        "banks in tree order, associations with their limits, queues, projects, factor "
        "weights, config, the stored usage as an opening balance, and the job records.",
    ),
    "import-slurm": (
        "slurm",
        "Bring a Slurm site's tree over from `sacctmgr dump` output DUMPFILE: the Cluster line "
        "is the root bank, accounts become banks and users associations, with their Fairshare "
        "(parent kept as 2147483647) and default accounts; what is not modelled (QOS, limits) "
        "is listed as ignored.",
    ),
    "ingest": ("jobs", "Record completed jobs, exactly once per (cluster, job id)."),
    "jobs": (
        "live_jobs",
        "USERNAME's jobs in a running Flux instance with their priority's factors: the fair-"
        "share the priority plugin used, and the ledger's bank and queue priorities and "
        "current factor weights.",
    ),
    "list-banks": ("banks", "List banks."),
    "list-configs": ("settings", "List config keys and values."),
    "list-factors": ("settings", "List priority factor weights."),
    "list-projects": ("projects", "List projects."),
    "list-queues": ("queues", "List queues."),
    "list-users": (
        "users",
        "List associations, filtered (filters are ANDed; a comma list matches any value).",
    ),
    "pop-db": (
        "migrate",
        "Load CSV files in flux-accounting's layout through the normal validated commands, "
        "each row one event; a refused row (listed) writes nothing at all.",
    ),
    "priority": (
        "priority",
        "The integer priority a job of USERNAME would get, factor by factor (on a Slurm site, "
        "Slurm's multifactor priority, like sprio -l -n -w).",
    ),
    "priority-update": (
        "priority",
        "Send the payloads to a running Flux instance's mf_priority plugin, then reprioritize"
        " (what flux-accounting's priority-update does).",
    ),
    "rebuild": ("admin", "Drop every read model and rebuild it from the event log."),
    "report": ("reports", "Reports over the ledger's history."),
    "reset-factors": ("settings", "Set the factor weights back to their defaults."),
    "scrub-old-jobs": ("maintenance", "Accepted for flux-accounting's scripts; removes nothing."),
    "show-usage": (
        "show_usage",
        "Chart the decayed usage of the associations or banks (the root left out) that used "
        "the most, largest first, scaled to the terminal's width.",
    ),
    "sprio": (
        "sprio",
        "Slurm's sprio of pending jobs given as input (one row per job, partition and QOS).",
    ),
    "sshare": (
        "sshare",
        "Slurm's sshare of the site's tree: every account row and your own user rows (-a: all "
        "users), with the fair-share of the algorithm in force (or --algorithm's, as a preview).",
    ),
    "sync-userids": (
        "maintenance",
        "Give each user's associations one userid: that of the user's most recently modified "
        "association.",
    ),
    "update-fshare": (
        "usage",
        "Bring usage up to date and recompute fair-share (the weighted tree walk).",
    ),
    "update-usage": ("usage", "Recompute every association's decayed usage at the ledger's time."),
    "verify": (
        "admin",
        "Check the log's hash chain and compare the read models with a rebuild from the log.",
    ),
    "view-bank": (
        "banks",
        "Show BANK: its row as JSON, its associations with -u, its hierarchy with -t.",
    ),
    "view-config": ("settings", "Show one config key."),
    "view-factor": ("settings", "Show a priority factor's weight."),
    "view-job-records": (
        "jobs",
        "List recorded jobs, filtered as flux-accounting's view-job-records does.",
    ),
    "view-project": ("projects", "Show PROJECT (JSON; a table with --parsable)."),
    "view-queue": ("queues", "Show QUEUE (JSON; a table with --parsable)."),
    "view-usage-report": (
        "usage",
        "Node-time used per association, bank or user between two times (sreport-like).",
    ),
    "view-user": ("users", "Show USERNAME's associations (JSON; a table with --parsable)."),
}

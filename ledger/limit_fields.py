"""What a limit is, apart from how the plugin applies limits to a job (ledger/limits.py): the
value that reads "unlimited" and the association's limit fields. Every table and read shows
them; the job-limit checks are only check-job's, so a read imports this module, not those."""

from __future__ import annotations

from ledger.bounds import INT32_MAX

# flux-accounting's "unlimited": the default of node, core and sched limits, printed as
# "unlimited". It is the largest value its INTEGER columns and the plugin's fields hold.
UNLIMITED = INT32_MAX


def is_unlimited(value: object) -> bool:
    """Whether a stored limit reads "unlimited" (an int, never a float or a bool that equals it)."""
    return type(value) is int and value == UNLIMITED


# An association's limits, in flux-accounting's column order: edit-user takes -1 or
# "unlimited" for each, and the tables, filters and diffs carry them in this order.
ASSOCIATION_LIMIT_FIELDS = (
    "max_running_jobs",
    "max_active_jobs",
    "max_nodes",
    "max_cores",
    "max_sched_jobs",
)

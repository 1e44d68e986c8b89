"""Slurm's `Fairshare=parent`, as a number and as text: two facts the read commands print, kept
apart from ledger/slurm_shares.py (which needs numpy) so that printing them costs no start-up."""

from __future__ import annotations

PARENT: int = 0x7FFFFFFF
"""Raw shares meaning `Fairshare=parent`: Slurm's SLURMDB_FS_USE_PARENT, as it stores it in
`shares_raw` (sacctmgr shows it as `parent`). Pass this as an account's or user's shares. Not
flux-accounting's "unlimited" (ledger.limit_fields.UNLIMITED), though the number is the same."""

PARENT_TEXT: str = "parent"
"""How Slurm prints `PARENT` (sshare's RawShares, sacctmgr's Fairshare), and so do we wherever a
Slurm algorithm reads it."""

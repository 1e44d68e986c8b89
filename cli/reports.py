"""Reports: explain-job and report fairshare-history. (Commands are added by their own
change.)"""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

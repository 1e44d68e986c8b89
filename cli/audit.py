"""Audit: history and diff. (Commands are added by their own change.)"""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

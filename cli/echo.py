"""Writing a long listing to standard output."""

from __future__ import annotations

from collections.abc import Iterable

import click

ECHO_LINES = 1_000  # lines per write to the terminal


def echo_lines(lines: Iterable[str]) -> None:
    """Each line and its newline, to standard output a thousand lines per write."""
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= ECHO_LINES:
            click.echo("\n".join(chunk))
            chunk = []
    if chunk:
        click.echo("\n".join(chunk))

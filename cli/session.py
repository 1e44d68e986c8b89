"""The click side of a command's session: find it in the context, and the options every change
takes. The session itself is the use-case layer's (ledger.usecases.session)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ledger.usecases.session import Session, default_actor

__all__ = ["Session", "change_options", "default_actor", "session", "warn"]


def warn(message: str) -> None:
    """A session's notes go to stderr, so stdout stays parsable."""
    click.echo(message, err=True)


def session(ctx: click.Context) -> Session:
    obj = ctx.find_object(Session)
    assert obj is not None
    return obj


def change_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--reason", default=None, help="Why: recorded with the change.")(func)
    func = click.option(
        "--actor",
        default=None,
        help="Who makes the change (default: the OS user). On PostgreSQL the database role is "
        "recorded, and ACTOR as who it acted on behalf of.",
    )(func)
    return func

"""The edge to a running Flux instance: RPCs to the mf_priority plugin and the job-list
queries of fetch-job-records. The `flux` Python module (flux-core's bindings) is imported only
here and only when asked for, so everything else runs on machines without Flux."""

from __future__ import annotations

import json
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ledger.flux_accounting.jobs import record_from_flux_row
from ledger.flux_accounting.payloads import PAYLOAD_NAMES, owner_entry

TOPIC = "job-manager.mf_priority.{}"
JOB_ATTRS = ["userid", "t_submit", "t_run", "t_inactive", "state", "ranks"]


class FluxUnavailable(Exception):
    pass


class Transport(Protocol):
    def rpc(self, topic: str, payload: Mapping[str, Any] | None, wait: bool = True) -> None: ...

    def owner(self) -> tuple[int, str]: ...


class JobSource(Protocol):
    def inactive_jobs(self, since: float) -> list[dict[str, Any]]: ...

    def lookup(self, job_id: int) -> dict[str, Any]: ...


@dataclass(frozen=True)
class LiveJobQuery:
    """What flux-accounting's `jobs` asks job-list for (its JobList arguments)."""

    username: str
    queue: str | None = None
    since: float = 0.0
    max_entries: int = 0  # 0: every job
    ids: tuple[int, ...] = ()
    filters: tuple[str, ...] = ()  # job states or results, e.g. "pending", "running"


class LiveJobSource(Protocol):
    def live_jobs(self, query: LiveJobQuery) -> list[dict[str, Any]]:
        """Each job as {id, username, bank, queue, urgency, priority, fairshare}: the
        fair-share the priority plugin used, from its `user.fairshare` annotation."""
        ...


def _flux() -> Any:
    try:
        import flux  # type: ignore[import-not-found]
        import flux.job  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        raise FluxUnavailable(
            "the flux Python module is not importable: run this on a node of the Flux "
            "instance, with flux-core's Python bindings on PYTHONPATH"
        ) from None
    return flux


class FluxHandle:
    """Both protocols over one `flux.Flux()` handle."""

    def __init__(self) -> None:
        self.flux = _flux()
        try:
            self.handle = self.flux.Flux()
        except Exception as err:  # the bindings raise OSError subclasses and their own
            raise FluxUnavailable(f"cannot connect to a Flux instance: {err}") from None

    def rpc(self, topic: str, payload: Mapping[str, Any] | None, wait: bool = True) -> None:
        future = self.handle.rpc(topic, payload)
        if wait:
            future.get()

    def owner(self) -> tuple[int, str]:
        uid = int(self.handle.attr_get("security.owner"))
        try:
            return uid, pwd.getpwuid(uid).pw_name
        except KeyError:
            return uid, str(uid)

    def inactive_jobs(self, since: float) -> list[dict[str, Any]]:
        future = self.flux.job.job_list_inactive(
            self.handle, since=since, max_entries=0, attrs=JOB_ATTRS
        )
        return list(future.get_jobs())

    def lookup(self, job_id: int) -> dict[str, Any]:
        return dict(
            self.flux.job.job_kvs_lookup(self.handle, job_id, keys=["R", "jobspec"], decode=False)
            or {}
        )

    def live_jobs(self, query: LiveJobQuery) -> list[dict[str, Any]]:
        listed = self.flux.job.JobList(
            self.handle,
            max_entries=query.max_entries,
            user=query.username,
            since=query.since,
            ids=list(query.ids) or None,
            **({"queue": query.queue} if query.queue else {}),
        )
        for state in query.filters:
            listed.add_filter(state)
        return [
            {
                "id": int(job.id),
                "username": job.username,
                "bank": job.bank,
                "queue": job.queue,
                "urgency": job.urgency,
                "priority": job.priority,
                # An empty annotation (the plugin has not seen the job) reads as "".
                "fairshare": job.annotations.user.fairshare,
            }
            for job in listed.jobs()
        ]


def connect() -> FluxHandle:
    return FluxHandle()


def send_priority_update(transport: Transport, sent: Mapping[str, Any]) -> list[str]:
    """flux-accounting's priority-update sequence: every table, reprioritize (not awaited),
    then the instance owner's own association. Returns the topics sent, in order."""
    topics = []
    for name in PAYLOAD_NAMES:
        transport.rpc(TOPIC.format(name), sent[name])
        topics.append(name)
    transport.rpc(TOPIC.format("reprioritize"), None, wait=False)
    topics.append("reprioritize")
    uid, username = transport.owner()
    transport.rpc(TOPIC.format("rec_update"), {"data": [owner_entry(uid, username)]})
    topics.append("rec_update")
    return topics


def fetch_records(source: JobSource, since: float) -> list[dict[str, Any]]:
    """Newly inactive jobs as ingest records. Jobs that never ran (no t_run or no R) are
    skipped, as flux-accounting does: they used nothing."""
    records = []
    for job in source.inactive_jobs(since):
        if not job.get("t_run"):
            continue
        found = source.lookup(int(job["id"]))
        if not found.get("R"):
            continue
        records.append(
            record_from_flux_row(
                {
                    "id": job["id"],
                    "userid": job["userid"],
                    "t_submit": job["t_submit"],
                    "t_run": job["t_run"],
                    "t_inactive": job["t_inactive"],
                    "R": _text(found["R"]),
                    "jobspec": _text(found.get("jobspec") or "{}"),
                }
            )
        )
    return records


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)

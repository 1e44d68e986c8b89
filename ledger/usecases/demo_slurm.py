"""The demo's Slurm site: a small cluster as `sacctmgr dump` writes it (users beside
sub-accounts, a `Fairshare=parent` account and user), two partitions with billing weights, and a
week of its jobs as `sacct -a -X -P` prints them, wall times in the site's timezone.

Everything is text held in memory (a temporary file would outlive a killed demo); the jobs are
drawn from a seeded generator, so a seed always gives the same file."""

from __future__ import annotations

import json
import random
from datetime import datetime
from zoneinfo import ZoneInfo

from ledger.slurm.sacct import SACCT_TIME_FORMAT

CLUSTER = "tux"
TIMEZONE = "America/Chicago"  # sacct prints wall times in the cluster's zone
DUMP_NAME = f"{CLUSTER}.cfg"
SACCT_NAME = f"{CLUSTER}-week.sacct"
# chemlab is Fairshare=parent: its users are ranked with chem's own (ana) as if they sat in chem,
# and cho is Fairshare=parent too, taking chem's share. ana sits beside the sub-account, as
# Slurm allows; `User - 'root'` is in every real dump.
DUMP = f"""# the demo's cluster, as `sacctmgr dump {CLUSTER}` writes it
QOS - 'normal':Description='Normal QOS default':Priority=10
QOS - 'high':Description='paid allocations':Priority=100:UsageFactor=2.000000
Cluster - '{CLUSTER}':Fairshare=1:QOS='high,normal':DefaultQOS='normal'
Parent - 'root'
User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
Account - 'bio':Description='biology':Organization='science':Fairshare=30
Account - 'chem':Description='chemistry':Organization='science':Fairshare=40
Account - 'phys':Description='physics':Organization='science':Fairshare=30
Parent - 'bio'
User - 'gus':DefaultAccount='bio':Fairshare=1
User - 'hal':DefaultAccount='bio':Fairshare=1
Parent - 'chem'
User - 'ana':DefaultAccount='chem':Fairshare=2
Account - 'chemlab':Description='chemistry lab':Organization='science':Fairshare=parent
Parent - 'chemlab'
User - 'ben':DefaultAccount='chemlab':Fairshare=1
User - 'cho':DefaultAccount='chemlab':Fairshare=parent
Parent - 'phys'
Account - 'astro':Description='astrophysics':Organization='science':Fairshare=2
Account - 'theory':Description='theory':Organization='science':Fairshare=1
Parent - 'astro'
User - 'dee':DefaultAccount='astro':Fairshare=1
User - 'eli':DefaultAccount='astro':Fairshare=1
Parent - 'theory'
User - 'fay':DefaultAccount='theory':Fairshare=1
"""
CONF_NAME = f"{CLUSTER}.conf"
# The parts of the cluster's slurm.conf that priority reads (the rest is listed as ignored):
# the multifactor weights, 16 CPU nodes and 4 GPU nodes, and two partitions whose
# TRESBillingWeights count memory per GiB and a GPU as two CPUs.
CONF = f"""# the demo cluster's slurm.conf
ClusterName={CLUSTER}
SchedulerType=sched/backfill
SelectType=select/cons_tres
PriorityType=priority/multifactor
PriorityDecayHalfLife=7-0
PriorityMaxAge=7-0
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=500
PriorityWeightPartition=1000
PriorityWeightQOS=2000
PriorityWeightTRES=GRES/gpu=1000
NodeName=c[01-16] CPUs=64 RealMemory=257000
NodeName=g[01-04] CPUs=32 RealMemory=515000 Gres=gpu:a100:4
PartitionName=batch Nodes=c[01-16] Default=YES MaxTime=2-0 TRESBillingWeights="CPU=1.0,Mem=0.25G"
PartitionName=gpu Nodes=g[01-04] PriorityJobFactor=2 MaxTime=1-0 \\
  TRESBillingWeights="CPU=1.0,Mem=0.25G,GRES/gpu=2.0"
"""
PENDING_NAME = "pending.jsonl"
# (user, account) of the jobs; a user listed twice submits twice as often.
SUBMITTERS = [
    ("ana", "chem"),
    ("ana", "chem"),
    ("ben", "chemlab"),
    ("cho", "chemlab"),
    ("dee", "astro"),
    ("dee", "astro"),
    ("dee", "astro"),
    ("eli", "astro"),
    ("fay", "theory"),
    ("gus", "bio"),
    ("hal", "bio"),
]
GPU_USERS = {"dee", "fay"}
ENDED_STATES = ["COMPLETED"] * 8 + ["FAILED", "TIMEOUT", "CANCELLED by 0"]
JOBS = 120
FIRST_JOB_ID = 4000
HEADER = (
    "JobIDRaw|JobID|Cluster|Partition|Account|User|State|Submit|Start|End|NCPUS|NNodes|AllocTRES"
)
UNKNOWN = "Unknown"


def week_of_sacct(start: float, end: float, seed: int) -> list[str]:
    """`sacct -a -X -P` lines (header first) of the jobs that ran in [start, end): ended jobs,
    a step line beside every tenth (sacct's -X leaves them out, but a site's file may hold
    them), and at the end two jobs still running and one pending, which ingest skips."""
    rng = random.Random(seed)
    zone = ZoneInfo(TIMEZONE)
    lines = [HEADER]
    for number in range(JOBS):
        job_id = FIRST_JOB_ID + number
        user, account = rng.choice(SUBMITTERS)
        partition = "gpu" if user in GPU_USERS and rng.random() < 0.7 else "batch"
        cpus = rng.choice([1, 2, 4, 8, 16, 32])
        gpus = rng.choice([1, 2, 4]) if partition == "gpu" else 0
        t_start = int(rng.uniform(start, end - 3600))
        t_end = min(int(end) - 60, t_start + int(rng.uniform(300, 8 * 3600)))
        t_submit = t_start - int(rng.uniform(0, 900))
        state = rng.choice(ENDED_STATES)
        times = [_local(t, zone) for t in (t_submit, t_start, t_end)]
        if None in times:
            continue  # a wall time the fall-back hour makes ambiguous: sacct's text cannot say
        tres = f"billing={cpus},cpu={cpus},mem={cpus * 2}G,node=1"
        tres += f",gres/gpu={gpus}" if gpus else ""
        head = f"{job_id}|{job_id}|{CLUSTER}|{partition}|{account}|{user}"
        submit, started, ended = (str(t) for t in times)
        lines.append(f"{head}|{state}|{submit}|{started}|{ended}|{cpus}|1|{tres}")
        if number % 10 == 0:
            step = f"{job_id}.batch|{job_id}.batch|{CLUSTER}|{partition}|{account}|"
            lines.append(f"{step}|{state}|{submit}|{started}|{ended}|{cpus}|1|cpu={cpus}")
    late = _local(int(end) - 1800, zone) or UNKNOWN
    for offset, (user, account) in enumerate([("dee", "astro"), ("ana", "chem")]):
        job_id = FIRST_JOB_ID + JOBS + offset
        lines.append(
            f"{job_id}|{job_id}|{CLUSTER}|batch|{account}|{user}|RUNNING|{late}|{late}|"
            f"{UNKNOWN}|4|1|billing=4,cpu=4,mem=8G,node=1"
        )
    job_id = FIRST_JOB_ID + JOBS + 2
    lines.append(
        f"{job_id}|{job_id}|{CLUSTER}|batch|bio|gus|PENDING|{late}|{UNKNOWN}|{UNKNOWN}|8|1|"
    )
    return lines


def pending_jobs(now: float) -> str:
    """A few jobs waiting at `now`, as sprio's JSON-lines input: one per user in another bank
    and partition, submitted hours to days ago, dee's in two partitions and under QOS high."""
    jobs = [
        (FIRST_JOB_ID + JOBS + 2, "gus", "bio", "batch", "normal", 2 * 3600, 8, ""),
        (FIRST_JOB_ID + JOBS + 3, "ana", "chem", "batch", "normal", 26 * 3600, 64, ""),
        (FIRST_JOB_ID + JOBS + 4, "dee", "astro", "gpu,batch", "high", 5 * 3600, 16, "gres/gpu=4"),
        (FIRST_JOB_ID + JOBS + 5, "fay", "theory", "gpu", "normal", 3 * 86400, 32, "gres/gpu=8"),
    ]
    lines = []
    for job_id, user, account, partition, qos, waited, cpus, tres in jobs:
        job = {
            "job_id": job_id,
            "user": user,
            "account": account,
            "partition": partition,
            "qos": qos,
            "submit_time": int(now) - waited,
            "cpus": cpus,
        }
        if tres:
            job["tres"] = tres
        lines.append(json.dumps(job))
    return "\n".join(lines) + "\n"


def _local(at: int, zone: ZoneInfo) -> str | None:
    """`at` as sacct prints it, a wall time in `zone`; None when that wall time occurs twice."""
    wall = datetime.fromtimestamp(at, zone)
    if wall.replace(fold=1).utcoffset() != wall.replace(fold=0).utcoffset():
        return None
    return wall.strftime(SACCT_TIME_FORMAT)

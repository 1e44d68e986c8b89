"""What the benches share about the run: the PostgreSQL database they use, and the ingest
rates the issue asks of each store (the other targets belong to the one bench that checks
them)."""

from __future__ import annotations

import os

DEFAULT_PG_URL = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
# jobs/s, 1M jobs into the bench site (the project's targets)
INGEST_TARGET = {"sqlite": 100_000.0, "postgres": 50_000.0}

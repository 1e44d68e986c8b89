"""Benchmarks of fairledger on generated data: `python -m bench.run` (see bench/run.py)."""

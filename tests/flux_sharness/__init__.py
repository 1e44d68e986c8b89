"""Runs flux-accounting's own sharness tests against fairledger (see README.md)."""

"""The `fairledger` command line: parse, call ledger/projections, print. No business rules."""

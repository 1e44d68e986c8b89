"""The use cases: what the CLI (and later an HTTP API) asks of the ledger, with plain arguments
and plain results. Each takes a `Session` (a ledger and its connection), never a click context,
and prints nothing: a front end parses its input, calls one of these, and renders the result."""

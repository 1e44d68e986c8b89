"""The edge where the ledger meets its database: the event store application, store URLs and
connections, the log's own tables, append-only triggers and PostgreSQL roles."""

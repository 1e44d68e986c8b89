"""Read models: tables in the ledger's own database, each kept by a projection with its
tracking position written in the same transaction, droppable and rebuilt from the log."""

"""fairledger's domain: events, the Site aggregate, the Ledger application and pure calculations."""

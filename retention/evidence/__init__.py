"""Evidence for auditors, from the ledger alone (``retention evidence``)."""

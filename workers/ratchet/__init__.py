"""The ratchet daemon: the finding lifecycle, the gate ratchet and the meta rule (issue 14)."""

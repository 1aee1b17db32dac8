"""RQ1, version selection: which version a request means (no generation)."""

"""RQ2, RC-QA: answers after a rollback, scored against the gold version."""

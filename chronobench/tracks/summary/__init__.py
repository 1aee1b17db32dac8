"""RQ3, rollback-consistent summaries: last-session coverage of a summary."""

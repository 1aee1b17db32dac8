"""The repair benchmark (issue 11): seeded controlled and multi-fault stress cases."""

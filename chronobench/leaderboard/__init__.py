"""Leaderboard tables built from finished runs (``results/LEADERBOARD.md`` and ``.csv``)."""

from chronobench.leaderboard.build import collect_runs, write_leaderboard

__all__ = ["collect_runs", "write_leaderboard"]

"""Dependency-guided repair: a second track of chronobench on the same store and backbone
protocol. Provenance graph (:mod:`~chronobench.tracks.repair.provenance`), tracing, support
check and planner (:mod:`~chronobench.tracks.repair.planner`), the agent and its offline policy
(:mod:`~chronobench.tracks.repair.agent`, :mod:`~chronobench.tracks.repair.policy`), repair methods
and baselines (:mod:`~chronobench.tracks.repair.methods`), metrics, the cell runner
(:mod:`~chronobench.tracks.repair.run`) and the leaderboard section
(:mod:`~chronobench.tracks.repair.report`). See docs/repair.md."""

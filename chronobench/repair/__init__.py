"""Dependency-guided repair: a second track of chronobench on the same store and backbone
protocol. Provenance graph (:mod:`~chronobench.repair.provenance`), tracing, support
check and planner (:mod:`~chronobench.repair.planner`), the agent and its offline policy
(:mod:`~chronobench.repair.agent`, :mod:`~chronobench.repair.policy`), repair methods
and baselines (:mod:`~chronobench.repair.methods`), metrics, the cell runner
(:mod:`~chronobench.repair.run`) and the leaderboard section
(:mod:`~chronobench.repair.report`). See docs/repair.md."""

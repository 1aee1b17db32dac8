"""The tracks: one folder per question the benchmark asks, holding what is that track's
own (its cell runner and params, its board section, its validity audit).

What every track shares stays where it was: the runner's registries and cell plumbing
(:mod:`chronobench.runner`), the board's tables (:mod:`chronobench.leaderboard`), the
viewer (:mod:`chronobench.viewer`) and the audit contract (:mod:`chronobench.audit`).
"""

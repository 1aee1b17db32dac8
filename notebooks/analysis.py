# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # chronobench: run analysis
#
# The published and local runs under `results/` (or `$CHRONOBENCH_RESULTS`) as data
# frames (`chronobench.results.frames`), one chart per question:
#
# 1. RQ2: does ChronoMem's RC-QA interval clear the floors' (request-blind policies)?
# 2. RQ1: how does R@1 depend on the request's style (intent) and source?
#
# Open it with `jupytext --to ipynb notebooks/analysis.py`, or run it as a script.

# %%
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from chronobench.results.frames import queries_df, runs_df  # noqa: E402

RESULTS = Path(os.environ.get("CHRONOBENCH_RESULTS", "results"))
FIGURES = Path(os.environ.get("CHRONOBENCH_FIGURES", RESULTS / "figures"))
FIGURES.mkdir(parents=True, exist_ok=True)

runs = runs_df(RESULTS)
print(f"{runs.run_id.nunique()} runs, {len(runs)} figures from {RESULTS}")


def largest_build(frame):
    """The rows of the built dataset with the most streams: a subset or the test fixture
    never shares a chart with the full data."""
    if frame.empty:
        return frame
    return frame[frame.data_build == frame.sort_values("n_streams").data_build.iloc[-1]]


# %% [markdown]
# ## RQ2: RC-QA with intervals against the floors
# One bar per system (x100, 95% cluster-bootstrap interval); floors grey, the best
# floor's upper bound a dashed line. A gap whose intervals overlap is not established.

# %%
FLOORS = ("floor_", "no_memory", "always_abstain", "constant_answer")
qa = runs[
    (runs.section == "probes")
    & (runs.group == "all")
    & (runs.metric == "rc_qa")
    & (runs.task_kind == "benchmark")
    & (runs.backbone == "extractive")
].dropna(subset=["mean"])
qa = largest_build(qa).sort_values("mean")
is_floor = qa.system.str.startswith(FLOORS)

fig, ax = plt.subplots(figsize=(7, 0.3 * max(len(qa), 4) + 1))
ax.barh(
    qa.system,
    100 * qa["mean"],
    xerr=[100 * (qa["mean"] - qa.ci_low), 100 * (qa.ci_high - qa["mean"])],
    color=["#bbbbbb" if f else "#3a6ea5" for f in is_floor],
    capsize=2,
)
if is_floor.any():
    ax.axvline(100 * qa[is_floor].ci_high.max(), color="#555555", linestyle="--", linewidth=1)
ax.set_xlabel("RC-QA x100 (95% CI)")
ax.set_title("RQ2: systems (blue) against request-blind floors (grey)")
fig.tight_layout()
fig.savefig(FIGURES / "rq2_rcqa_vs_floors.png", dpi=120)
print(qa[["system", "mean", "ci_low", "ci_high"]].to_string(index=False))

# %% [markdown]
# ## RQ1: R@1 by request style and source
# Per selector, R@1 (x100) on each request intent (undo, restore_to, ...) and each
# request source (template, hand-written `user`), session granularity.

# %%
sel = runs[
    runs.section.str.startswith("selection:")
    & (runs.metric == "recall_at_1")
    & (runs.granularity == "session")
    & (runs.group != "all")
].dropna(subset=["mean"])
sel = largest_build(sel).assign(selector=lambda f: f.section.str.split(":").str[1])
table = sel.pivot_table(index="group", columns="selector", values="mean", aggfunc="mean")

fig, ax = plt.subplots(figsize=(8, 4))
if not table.empty:
    (100 * table).plot.bar(ax=ax, rot=30)
    ax.legend(fontsize=7)
ax.set_ylabel("R@1 x100 (mean over request sets)")
ax.set_title("RQ1: R@1 by request style (intent:) and source (source:)")
fig.tight_layout()
fig.savefig(FIGURES / "rq1_r1_by_style_and_source.png", dpi=120)
print((100 * table).round(1).to_string())

# %% [markdown]
# ## One query, every scored question
# `queries_df` has a row per scored question: request, chosen and gold version,
# answer, gold answer, score and label. The worst-answered queries of the first run:

# %%
rows = queries_df(RESULTS, run=qa.run_id.iloc[-1] if not qa.empty else None)
if not rows.empty:
    worst = rows.groupby(["query_id", "outcome"])["score"].mean().sort_values().head(5)
    print(worst.to_string())
print(sorted(p.name for p in FIGURES.glob("*.png")))

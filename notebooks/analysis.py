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
# Loads every finished run under `results/runs/` (or `$CHRONOBENCH_RESULTS/runs`) and
# plots (1) version-selection accuracy as a function of the allowed distance to `v*`,
# per selector, and (2) rollback-consistent QA by system. Open it with
# `jupytext --to ipynb notebooks/analysis.py` or run it as a script.

# %%
import json
import os
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(os.environ.get("CHRONOBENCH_RESULTS", "results"))
FIGURES = Path(os.environ.get("CHRONOBENCH_FIGURES", RESULTS / "figures"))
FIGURES.mkdir(parents=True, exist_ok=True)


def load_samples(results: Path) -> list[dict]:
    """All sample rows of all runs, each tagged with its run's cell."""
    rows = []
    for run in sorted((results / "runs").glob("*")):
        if not (run / "manifest.json").exists():
            continue
        cell = json.loads((run / "manifest.json").read_text())["cell"]
        with open(run / "samples.jsonl", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                row["_cell"] = cell
                rows.append(row)
    return rows


rows = load_samples(RESULTS)
print(f"{len(rows)} samples from {RESULTS}")

# %% [markdown]
# ## Selection accuracy vs distance to v*
# For each selector, the fraction of queries whose top-1 version lies within `d`
# versions of the gold target (d = 0 is Recall@1; d = 2 is Scope@2).

# %%
dist = defaultdict(list)
for r in rows:
    if r["kind"] != "selection":
        continue
    key = f"{r['selector']} ({r['_cell']['granularity']})"
    top = r["ranked"][0][0] if r["ranked"] else None
    dist[key].append(abs(top - r["gold_version"]) if top is not None else float("inf"))

max_d = 10
fig, ax = plt.subplots(figsize=(7, 4))
for key in sorted(dist):
    ds = dist[key]
    ax.plot(
        range(max_d + 1),
        [sum(d <= k for d in ds) / len(ds) for k in range(max_d + 1)],
        marker="o",
        label=f"{key}, n={len(ds)}",
    )
ax.set_xlabel("allowed distance |v̂ - v*| (versions)")
ax.set_ylabel("fraction of queries")
ax.set_title("Version selection accuracy vs distance to v*")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(FIGURES / "selection_vs_distance.png", dpi=120)

# %% [markdown]
# ## Rollback-consistent QA by system
# Answerable probes scored by F1, future-evidence probes by abstention; leakage shown
# beside it so abstention cannot hide a leak.

# %%
by_system = defaultdict(lambda: defaultdict(list))
for r in rows:
    if r["kind"] != "probe" or r["probe_kind"] == "summary":
        continue
    system = r["_cell"]["system"]
    for field in ("rc_qa", "qa_f1", "future_abstain", "future_leak"):
        if field in r["scores"]:
            by_system[system][field].append(r["scores"][field])

systems = sorted(by_system)
fields = ["rc_qa", "qa_f1", "future_abstain", "future_leak"]
fig, ax = plt.subplots(figsize=(8, 4))
width = 0.2
for i, field in enumerate(fields):
    means = [
        sum(by_system[s][field]) / len(by_system[s][field]) if by_system[s][field] else 0.0
        for s in systems
    ]
    ax.bar([x + i * width for x in range(len(systems))], means, width, label=field)
ax.set_xticks([x + 1.5 * width for x in range(len(systems))], systems, rotation=30, ha="right")
ax.set_ylabel("mean")
ax.set_title("Rollback-consistent QA by system")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(FIGURES / "qa_by_system.png", dpi=120)
print(sorted(p.name for p in FIGURES.glob("*.png")))

"""``DATASETS``: the dataset registry (re-exported by :mod:`chronobench.runner.components`).

Its own module so that :mod:`chronobench.runner.datasets`, which builds and loads a
dataset by its entry, and the components, which check it, both read it without
importing each other.
"""

from __future__ import annotations

from chronobench.registry import Registry

__all__ = ["DATASETS"]

# dataset name -> its Dataset (data_builders/dataset.py): the params model holding the
# build defaults, the granularities, its own check and its builder.
DATASETS = Registry(
    "dataset",
    {
        "locomo": "data_builders.locomo.dataset:LOCOMO",
        "mab": "data_builders.mab.dataset:MAB",
        # The repair track builds and reads its own cases (no builder here).
        "repair": "chronobench.tracks.repair.dataset:REPAIR",
    },
    entry_points="chronobench.datasets",
    hint="register one with DATASETS.register(name, 'module:DATASET'), a "
    "data_builders.dataset.Dataset, as the built-ins in chronobench.runner.dataset_registry are",
)

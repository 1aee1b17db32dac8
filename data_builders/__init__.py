"""Dataset builders: LoCoMo and MemoryAgentBench as version streams with rollback queries.

Public API: :func:`build_dataset` (build or reuse a folder of a :class:`Dataset`:
:data:`LOCOMO`, :data:`MAB`), :func:`resolve_locomo_source`, :func:`paraphrase_queries`,
:class:`DatasetError`. See ``data_builders/README.md``.
"""

from data_builders.build import build_dataset, default_out_dir
from data_builders.dataset import BuildPlan, Dataset
from data_builders.errors import DatasetError
from data_builders.locomo.dataset import LOCOMO
from data_builders.locomo.source import resolve_locomo_source
from data_builders.mab.dataset import MAB
from data_builders.manifest import BUILDER_VERSION
from data_builders.paraphrase import paraphrase_queries

__all__ = [
    "BUILDER_VERSION",
    "LOCOMO",
    "MAB",
    "BuildPlan",
    "Dataset",
    "DatasetError",
    "build_dataset",
    "default_out_dir",
    "paraphrase_queries",
    "resolve_locomo_source",
]

"""LoCoMo (snap-research/locomo) as version streams with rollback queries."""

from data_builders.locomo.build import build_locomo
from data_builders.locomo.source import LOCOMO_URL, load_locomo, resolve_locomo_source
from data_builders.locomo.streams import GRANULARITIES

__all__ = ["GRANULARITIES", "LOCOMO_URL", "build_locomo", "load_locomo", "resolve_locomo_source"]

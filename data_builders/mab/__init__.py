"""MemoryAgentBench (ai-hyz/MemoryAgentBench) as version streams with rollback queries."""

from data_builders.mab.build import build_mab
from data_builders.mab.chunking import chunk_context
from data_builders.mab.source import HUB_NAME, SPLITS, load_mab_rows

__all__ = ["HUB_NAME", "SPLITS", "build_mab", "chunk_context", "load_mab_rows"]

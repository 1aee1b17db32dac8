"""Probe pools live in :mod:`chronobench.data.probes` (the run-time data model needs them
without importing the builders); this module keeps the builders' import path."""

from chronobench.data.probes import *  # noqa: F403
from chronobench.data.probes import (  # noqa: F401  (private names some builders use)
    SUMMARY_QUESTION,
    PoolConflict,
    PoolQA,
    PoolSession,
    ProbePool,
    attach_probes,
    past_text,
)

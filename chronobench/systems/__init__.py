"""Memory systems under test: ChronoMem here, baselines in the top-level ``baselines`` package.

Every system implements :class:`chronobench.protocols.MemorySystem` (oracles also
:class:`chronobench.protocols.OracleSystem`) and is created by name through
:func:`create_system`; users register their own with :func:`register_system`.
"""

from chronobench.systems.base import SystemContext
from chronobench.systems.registry import create_system, is_oracle, register_system, system_names

__all__ = ["SystemContext", "create_system", "is_oracle", "register_system", "system_names"]

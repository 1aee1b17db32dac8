"""Baselines that do not restore memory state (prompt-only, full-history, RAG-only) and the
floors every table reports (no-memory, always-abstain). All implement
:class:`chronobench.protocols.MemorySystem` and are registered in
:mod:`chronobench.systems.registry`."""

"""Integrations of ChronoMem with agent frameworks (optional extras).

- :mod:`chronobench.integrations.adk`: ChronoMem as a Google ADK memory service, with
  rollback tools an ``LlmAgent`` can call (``pip install "chronobench[adk]"``).
"""

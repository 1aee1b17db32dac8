"""chronobench: a benchmark and harness for natural-language memory rollback in LLM agents.

Heavy dependencies (torch, sentence-transformers, vllm) are imported lazily by the
modules that need them, so ``import chronobench`` and ``python -m chronobench --help``
stay fast.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]

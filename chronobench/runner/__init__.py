"""The experiment runner behind ``python -m chronobench run``."""

from chronobench.runner.cell import run_cell

__all__ = ["run_cell"]

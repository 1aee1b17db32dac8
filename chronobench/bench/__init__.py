"""Speed benchmarks (``python -m chronobench bench <name>``)."""

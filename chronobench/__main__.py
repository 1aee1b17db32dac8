"""Entry point for ``python -m chronobench``."""

from chronobench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

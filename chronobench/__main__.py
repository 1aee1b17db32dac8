"""Entry point for ``python -m chronobench``."""

from chronobench.commands import main

if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m chronomem``: see :mod:`chronomem.cli`."""

from chronomem.cli import main

raise SystemExit(main())

"""Expected errors: bad input a user can fix. The CLI prints their message in one or two
lines and exits 2 (``--traceback`` or ``CHRONOBENCH_DEBUG=1`` shows the stack).

Other modules keep their own error types (``DatasetError``, ``UserQueryError``,
``UncertainRequestError``); :func:`is_expected` lists every type the CLI treats as
expected.
"""

from __future__ import annotations


class ChronobenchError(Exception):
    """Base class of the harness's expected errors."""


class ConfigError(ChronobenchError, ValueError):
    """A config key or value is unknown, unread or mistyped; the message names key and file."""


class UnknownNameError(ConfigError, KeyError):
    """A registry has no entry of that name (a KeyError too, for dict-like callers)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(ChronobenchError, ImportError):
    """An optional package a selected component needs is not installed."""


class ResultsError(ChronobenchError, ValueError):
    """A results file or run folder is missing or does not match the results schema."""


class LeaderboardShrinkError(ChronobenchError):
    """Rebuilding would drop rows of the committed leaderboard (pass --force to allow it)."""


def expected_types() -> tuple[type[BaseException], ...]:
    """Exception types reported as a short message (exit 2) instead of a traceback."""
    types: list[type[BaseException]] = [ChronobenchError]
    for module, name in (
        ("data_builders.errors", "DatasetError"),
        ("data_builders.user_query_file", "UserQueryError"),
        ("chronobench.memory", "UncertainRequestError"),
    ):
        try:
            mod = __import__(module, fromlist=[name])
            types.append(getattr(mod, name))
        except (ImportError, AttributeError):
            continue
    return tuple(types)


def is_expected(exc: BaseException) -> bool:
    """True when ``exc`` is bad input the user can fix (no stack trace needed)."""
    return isinstance(exc, expected_types())

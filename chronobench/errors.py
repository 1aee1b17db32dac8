"""Expected errors: bad input a user can fix. The CLI prints their message in one or two
lines and exits 2 (``--traceback`` or ``CHRONOBENCH_DEBUG=1`` shows the stack).

Other modules keep their own error types (``DatasetError``, ``UserQueryError``,
``UncertainRequestError``, ``StoreConnectionError``: a database server that cannot be
reached); :func:`is_expected` lists every type the CLI treats as expected.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


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


def closest_first(given: str, valid: Iterable[str]) -> list[str]:
    """``valid`` (each once) with the names closest to ``given`` first, the rest in the
    order given."""
    names = list(dict.fromkeys(str(v) for v in valid))
    close = difflib.get_close_matches(given, names, n=3, cutoff=0.6)
    return [*close, *(n for n in names if n not in close)]


def valid_keys_hint(given: str, valid: Iterable[str], *, of: str = "") -> str:
    """``did you mean 'top_k_items'? valid keys of system: top_k_items, name, ...`` for
    an unknown key ``given`` (its last dotted part is compared); "" when none is valid."""
    leaf = given.rsplit(".", 1)[-1]
    names = closest_first(leaf, valid)
    if not names:
        return ""
    close = difflib.get_close_matches(leaf, names, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    where = f" of {of}" if of else ""
    return f"{guess}valid keys{where}: {', '.join(names)}"


def expected_types() -> tuple[type[BaseException], ...]:
    """Exception types reported as a short message (exit 2) instead of a traceback."""
    types: list[type[BaseException]] = [ChronobenchError]
    for module, name in (
        ("data_builders.errors", "DatasetError"),
        ("data_builders.user_query_file", "UserQueryError"),
        ("chronomem", "UncertainRequestError"),
        ("chronomem", "StoreConnectionError"),
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

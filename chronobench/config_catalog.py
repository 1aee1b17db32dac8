"""What a run can select: the options of each config group, with a one-line summary.

Read from the config files themselves (``configs/`` first, then the user's folders:
``--config-dir`` and ``$CHRONOBENCH_CONFIG_PATH``), so ``chronobench list``, ``run
--help`` and the did-you-mean of a misspelt option name exactly what Hydra would find,
plug-in configs included, and importing this module loads no component.

A file's summary is its first comment line (after Hydra's ``# @package`` line): the
shipped presets keep that line self-contained for this reason.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Option", "closest_option", "group_options", "summary_of"]


@dataclass(frozen=True)
class Option:
    """One selectable config file: ``group=name``."""

    group: str
    name: str
    summary: str
    path: Path


def summary_of(path: Path, width: int = 96) -> str:
    """The first sentence of a YAML file's leading comment block, at most ``width``
    characters (cut at a word, with "..."); "" when the file starts with no comment.
    Hydra's ``@package`` line describes no option and is skipped; the comment's first
    paragraph ends at an empty comment line or at the notes on the file's format
    (``Unset keys take their defaults ...``)."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if not text.startswith("#"):
            if words or text:
                break
            continue
        body = text.lstrip("#").strip()
        if body.startswith("@package"):
            continue
        if not body or body.startswith("Unset keys"):
            break  # the end of the first paragraph, or the file's format notes
        words.extend(body.split())
    text = _ISSUE_REF.sub("", " ".join(words))
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".")
    if len(sentence) <= width:
        return sentence
    return sentence[: width - 3].rsplit(" ", 1)[0].rstrip(",;:(") + "..."


# A full stop, then a capital: "e.g. `run ...`" and "v0.3" end no sentence.
_SENTENCE_END = re.compile(r"(?<=[\w)`'\"]\.)\s+(?=[A-Z])")
# Config comments may cite a tracker reference in parentheses ("(issue N; docs/peers.md)"):
# dropped from one-line summaries, since a reader of `list` cannot look it up.
_ISSUE_REF = re.compile(r"\s*\(issue \d+[^)]*\)|\bissue \d+[;,]\s*")


def group_options(group: str, config_dirs: Iterable[str | Path] = ()) -> list[Option]:
    """Every option of config group ``group`` (``system``, ``experiment``, ...), sorted
    by name; a shipped file shadows a user file of the same name, as on Hydra's search
    path."""
    from chronobench.paths import config_dir, user_config_dirs

    found: dict[str, Option] = {}
    for root in [config_dir(), *user_config_dirs(config_dirs)]:
        folder = Path(root) / group
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            found.setdefault(path.stem, Option(group, path.stem, summary_of(path), path))
    return [found[name] for name in sorted(found)]


def closest_option(group: str, given: str, config_dirs: Iterable[str | Path] = ()) -> str | None:
    """The option of ``group`` closest to a misspelt ``given`` (``chronmem`` ->
    ``chronomem``), or None when nothing is close."""
    names = [o.name for o in group_options(group, config_dirs)]
    close = difflib.get_close_matches(given, names, n=1, cutoff=0.6)
    return close[0] if close else None

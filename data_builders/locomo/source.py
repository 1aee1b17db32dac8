"""Locate, load and validate the LoCoMo JSON file."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from data_builders.errors import DatasetError, where

LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
ENV_VAR = "CHRONOBENCH_LOCOMO"
_SESSION_KEY = re.compile(r"session_(\d+)")


def _shared_candidates() -> list[Path]:
    # Walk up from this package and from the cwd looking for ../shared/data next to a repo.
    starts = [Path(__file__).resolve().parent, Path.cwd().resolve()]
    seen: list[Path] = []
    for start in starts:
        for d in (start, *start.parents):
            cand = d.parent / "shared" / "data" / "locomo10.json"
            if cand not in seen:
                seen.append(cand)
    return seen


def resolve_locomo_source(path: str | os.PathLike[str] | None = None) -> Path:
    """Find locomo10.json: explicit path > $CHRONOBENCH_LOCOMO > ../shared/data next to the
    repository > ~/.cache/chronobench (downloaded from the public GitHub file if absent)."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise DatasetError(f"{p}: LoCoMo source file not found; pass an existing locomo10.json")
        return p
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise DatasetError(f"{p}: ${ENV_VAR} points to a missing file; fix or unset it")
        return p
    for cand in _shared_candidates():
        if cand.is_file():
            return cand
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "chronobench"
    target = cache / "locomo10.json"
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    try:
        with urllib.request.urlopen(LOCOMO_URL, timeout=60) as resp:  # noqa: S310 - fixed URL
            tmp.write_bytes(resp.read())
    except (urllib.error.URLError, OSError) as exc:
        raise DatasetError(
            f"could not download LoCoMo from {LOCOMO_URL} ({exc}); you seem to be offline. "
            f"Download it by hand and pass --source PATH or set ${ENV_VAR}."
        ) from exc
    os.replace(tmp, target)
    return target


def _require(obj: dict[str, Any], key: str, kind: type, path: Path, rec: str, field: str) -> Any:
    if key not in obj:
        raise DatasetError(f"{where(path, rec, field)}: missing; is this a LoCoMo file?")
    if not isinstance(obj[key], kind):
        raise DatasetError(
            f"{where(path, rec, field)}: expected {kind.__name__}, got {type(obj[key]).__name__}"
        )
    return obj[key]


def session_numbers(conv: dict[str, Any]) -> list[int]:
    """Session indices present in a conversation, ascending."""
    return sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))


def load_locomo(path: Path) -> list[dict[str, Any]]:
    """Load and shape-check a LoCoMo file; errors name the file, the record and the field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(f"{path}: file not found") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, list):
        raise DatasetError(
            f"{path}: top level must be a list of conversations, got {type(data).__name__}"
        )
    seen: set[str] = set()
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise DatasetError(f"{where(path, i)}: expected an object, got {type(rec).__name__}")
        sid = _require(rec, "sample_id", str, path, str(i), "sample_id")
        if sid in seen:
            raise DatasetError(f"{where(path, sid, 'sample_id')}: duplicate sample_id")
        seen.add(sid)
        conv = _require(rec, "conversation", dict, path, sid, "conversation")
        for key in ("speaker_a", "speaker_b"):
            _require(conv, key, str, path, sid, f"conversation.{key}")
        if not session_numbers(conv):
            raise DatasetError(f"{where(path, sid, 'conversation')}: no session_N lists")
        for n in session_numbers(conv):
            turns = _require(conv, f"session_{n}", list, path, sid, f"conversation.session_{n}")
            for j, t in enumerate(turns):
                fld = f"conversation.session_{n}[{j}]"
                if not isinstance(t, dict):
                    raise DatasetError(f"{where(path, sid, fld)}: expected an object")
                for key in ("speaker", "dia_id", "text"):
                    _require(t, key, str, path, sid, f"{fld}.{key}")
        qa = _require(rec, "qa", list, path, sid, "qa")
        for j, q in enumerate(qa):
            if not isinstance(q, dict):
                raise DatasetError(f"{where(path, sid, f'qa[{j}]')}: expected an object")
            _require(q, "question", str, path, sid, f"qa[{j}].question")
            _require(q, "evidence", list, path, sid, f"qa[{j}].evidence")
            if not isinstance(q.get("category"), int):
                raise DatasetError(f"{where(path, sid, f'qa[{j}].category')}: expected an integer")
        for key in ("event_summary", "observation"):
            if not isinstance(rec.get(key, {}), dict):
                raise DatasetError(f"{where(path, sid, key)}: expected an object")
    return data


_ID_RE = re.compile(r"D:?(\d+):0*(\d+)")


def parse_evidence(raw: list[Any]) -> tuple[list[str], list[str]]:
    """Normalise evidence ids (split "D8:6; D9:17", repair "D:11:26" and "D30:05").

    Returns ``(ids, unparseable)``.
    """
    ids: list[str] = []
    bad: list[str] = []
    for item in raw:
        for tok in re.split(r"[,;\s]+", str(item).strip()):
            if not tok:
                continue
            m = _ID_RE.fullmatch(tok)
            if m:
                ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
            else:
                bad.append(tok)
    return ids, bad

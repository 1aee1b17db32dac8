"""User-supplied rollback queries: validate a JSONL file and turn it into RollbackQuery.

One JSON object per line::

    {"sample_id": "conv-26", "query": "Forget everything since the camping trip",
     "intent": "undo", "target_session": 4}

``intent`` is optional (default ``restore_to``). The target is exactly one of
``target_session`` (LoCoMo: the state right after that session, 0 = empty memory; it
resolves to a version for the built granularity) or ``target_version`` (0..n). Each query
gets the probes the builder would attach at the same ``v*``. Query ids are content-based
(sample, request text, intent, target), never line numbers.

Optional fields: ``style`` (how the request is phrased, kept in the query's meta for
per-style scores), ``expect`` (``act``, the default, or ``refuse``: a request that names
nothing a correct system could act on; it has no target, and its ``v*`` is the last
version, the state a refusal leaves), ``evidence`` (the turns that state the named event:
the turn gold of ``turn_gold="evidence"`` without a notes file) and ``claim`` (what
``data_builders/claims.py`` checks; the loader only requires an object, and under
``turn_gold="evidence"`` a file with neither ``evidence`` fields nor a notes file takes the
turn gold from its claims: the event's turns, except for an offset or a month, which name a
chat).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from chronobench.data.io import BuiltDataset
from chronobench.data.schema import RollbackQuery, Stream
from chronobench.hashing import sha256_text
from data_builders.probes import ProbePool, add_final_probes, attach_probes

FIELDS = {
    "sample_id",
    "query",
    "intent",
    "target_session",
    "target_version",
    "style",
    "expect",
    "evidence",
    "claim",
}
INTENTS = ("restore_to", "undo")
EXPECTS = ("act", "refuse")


class UserQueryError(ValueError):
    """A user query file is malformed; the message names file, line, field and fix."""


def _err(path: Path, line: int, field: str | None, msg: str) -> UserQueryError:
    loc = f"{path}: line {line}" + (f": field {field!r}" if field else "")
    return UserQueryError(f"{loc}: {msg}")


def session_version(stream: Stream, session: int) -> int:
    """Version right after every write of sessions <= ``session`` (0 when none)."""
    return max(
        (w.version for w in stream.writes if int(w.labels.get("session", 10**9)) <= session),
        default=0,
    )


def _int_field(rec: dict[str, Any], key: str, path: Path, line: int) -> int:
    val = rec[key]
    if isinstance(val, bool) or not isinstance(val, int) or val < 0:
        raise _err(path, line, key, f"expected a non-negative integer, got {val!r}")
    return val


def _target(rec: dict[str, Any], stream: Stream, path: Path, line: int) -> int:
    has_s, has_v = "target_session" in rec, "target_version" in rec
    if has_s == has_v:
        raise _err(
            path, line, "target_session", "give exactly one of target_session or target_version"
        )
    if has_v:
        v = _int_field(rec, "target_version", path, line)
        if v > stream.n_versions:
            raise _err(
                path,
                line,
                "target_version",
                f"{v} is past the stream's last version {stream.n_versions}",
            )
        return v
    if stream.dataset != "locomo":
        raise _err(
            path, line, "target_session", "only LoCoMo streams have sessions; use target_version"
        )
    s = _int_field(rec, "target_session", path, line)
    sessions = stream.meta.get("sessions") or sorted(
        {int(w.labels["session"]) for w in stream.writes}
    )
    if s != 0 and s not in sessions:
        raise _err(
            path,
            line,
            "target_session",
            f"{s} is not a session of {stream.sample_id}; choose 0 or one of {sessions}",
        )
    return session_version(stream, s)


def _content_id(rec: dict[str, Any], intent: str, v_star: int) -> str:
    # Not canonical_json: published sample ids hold these 12 hex digits, so the
    # encoding (default separators) stays as it was.
    blob = json.dumps([rec["sample_id"], rec["query"].strip(), intent, v_star], ensure_ascii=False)
    return sha256_text(blob)[:12]


# A request that names a whole conversation ("the chat where ...") cuts at the session's
# edge under either turn gold; one that names an event cuts at its evidence turns.
NAMES_CONVERSATION = re.compile(
    r"\b(?:conversations?|convos?|chats?|talks?|sessions?|discussions?)\b", re.IGNORECASE
)


def claim_evidence(claim: dict[str, Any] | None) -> list[str] | None:
    """The turns a checked claim says state the event the request names, or None when the
    request names something else: a chat at an offset from the event, or a month's chat."""
    if not claim or "offset" in claim or "month" in claim:
        return None
    return list(claim.get("event") or []) or None


def notes_evidence(path: Path) -> list[list[str] | None]:
    """Per line of a query file, the evidence turn ids of its notes file
    (``<stem>.notes.md``, column *evidence*; None for a request that names only a date)."""
    notes = path.with_name(path.stem + ".notes.md")
    if not notes.is_file():
        raise UserQueryError(
            f"{path}: dataset.turn_gold=evidence needs the notes file {notes.name} beside it "
            "(a table with an 'evidence' column); use dataset.turn_gold=session"
        )
    header: list[str] | None = None
    seen_evidence = False
    out: list[list[str] | None] = []
    lines = notes.read_text(encoding="utf-8").splitlines()
    for i, raw in enumerate(lines):
        if not raw.startswith("|"):
            continue
        cells = [c.strip() for c in raw.strip().strip("|").split("|")]
        if i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            # A table's header row: only the first table with an evidence column is the
            # request table (a notes file may go on with tables of other sets, numbered
            # from 1 again).
            header = cells if "evidence" in cells and not seen_evidence else None
            seen_evidence = seen_evidence or header is not None
        elif header is not None and cells and cells[0].isdigit():
            ev = cells[header.index("evidence")]
            out.append(None if ev in ("date", "-", "") else evidence_cell(ev, notes, cells[0]))
    return out


_TURN = re.compile(r"D(\d+):(\d+)(?:-(\d+))?")
_SESSION = re.compile(r"S\d+")


def evidence_cell(cell: str, notes: Path | str = "notes", row: str = "?") -> list[str] | None:
    """The evidence turn ids of one notes cell. The cell names the turns that state the
    event first; what follows the first ``;`` says where the topic comes up again, and
    parentheses hold remarks, so neither is evidence. Session mentions (``S5``) name
    where the turns sit; a range ``D1:25-27`` is its turns. None: no turn named (the
    session boundary stays the gold)."""
    head = re.sub(r"\([^)]*\)", " ", cell.split(";", 1)[0])
    turns: list[str] = []
    for token in head.replace(",", " ").split():
        m = _TURN.fullmatch(token)
        if m:
            first, last = int(m[2]), int(m[3] or m[2])
            if last < first:
                raise UserQueryError(
                    f"{notes}: row {row}: evidence {cell!r}: range {token} ends before it starts"
                )
            turns += [f"D{m[1]}:{t}" for t in range(first, last + 1)]
        elif not _SESSION.fullmatch(token):
            raise UserQueryError(
                f"{notes}: row {row}: evidence {cell!r}: {token!r} is neither a turn id "
                "(D5:4, a range D5:4-6) nor a session (S5); put later mentions after a ';' "
                "and remarks in parentheses"
            )
    return turns or None


def evidence_version(stream: Stream, turns: list[str], intent: str) -> int | None:
    """The turn-granularity v* an event-naming request's evidence gives: ``restore_to``
    keeps through the last evidence turn, ``undo`` restores to just before the first."""
    where = {d: w.version for w in stream.writes for d in w.labels.get("dialog_ids", [])}
    vs = [where[t] for t in turns if t in where]
    if not vs:
        return None
    return max(vs) if intent == "restore_to" else min(vs) - 1


def _optional_fields(rec: dict[str, Any], path: Path, line: int) -> None:
    """Shape of ``style``, ``expect``, ``evidence`` and ``claim`` where present."""
    if "style" in rec and (not isinstance(rec["style"], str) or not rec["style"].strip()):
        raise _err(path, line, "style", f"expected a non-empty string, got {rec['style']!r}")
    if "expect" in rec and rec["expect"] not in EXPECTS:
        raise _err(path, line, "expect", f"{rec['expect']!r}; use one of {EXPECTS}")
    ev = rec.get("evidence")
    if "evidence" in rec and (
        not isinstance(ev, list) or not all(isinstance(d, str) and d.strip() for d in ev)
    ):
        raise _err(
            path, line, "evidence", f'expected a list of dialog ids like ["D5:4"], got {ev!r}'
        )
    if "claim" in rec and not isinstance(rec["claim"], dict):
        raise _err(path, line, "claim", f"expected a JSON object, got {rec['claim']!r}")


def read_query_lines(path: str | os.PathLike[str]) -> list[tuple[int, dict[str, Any]]]:
    """The requests of a query file as ``(line number, object)``, shape-checked without
    a dataset: valid JSON objects, known fields, a non-empty ``sample_id`` and ``query``,
    a known ``intent``, exactly one target, a non-negative integer. A file with no
    request is an error too. Raises :class:`UserQueryError` naming file, line and field.
    """
    path = Path(path)
    if not path.is_file():
        raise UserQueryError(f"{path}: file not found")
    out: list[tuple[int, dict[str, Any]]] = []
    for line, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _err(
                path, line, None, f"not valid JSON ({exc.msg}); one object per line"
            ) from exc
        if not isinstance(rec, dict):
            raise _err(path, line, None, "expected a JSON object")
        extra = sorted(set(rec) - FIELDS)
        if extra:
            raise _err(path, line, extra[0], f"unknown field; allowed: {sorted(FIELDS)}")
        for key in ("sample_id", "query"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise _err(path, line, key, "required non-empty string")
        intent = rec.get("intent", "restore_to")
        if intent not in INTENTS:
            raise _err(path, line, "intent", f"{intent!r}; use one of {INTENTS}")
        _optional_fields(rec, path, line)
        targets = [k for k in ("target_session", "target_version") if k in rec]
        if rec.get("expect") == "refuse":
            if targets:
                raise _err(
                    path,
                    line,
                    targets[0],
                    'a request with "expect": "refuse" has no target (a refusal leaves the '
                    "memory as it is); drop the field",
                )
        elif len(targets) != 1:
            raise _err(
                path, line, "target_session", "give exactly one of target_session or target_version"
            )
        else:
            _int_field(rec, targets[0], path, line)
        out.append((line, rec))
    if not out:
        raise UserQueryError(
            f"{path}: no queries (the file is empty or holds only blank lines); write one "
            'JSON object per line, e.g. {"sample_id": "conv-26", "query": "forget '
            'everything since the camping trip", "intent": "undo", "target_session": 4}'
        )
    return out


def load_user_queries(
    path: str | os.PathLike[str], built: BuiltDataset, *, turn_gold: str = "session"
) -> list[RollbackQuery]:
    """Validate ``path`` against a built dataset and return its queries (source="user").

    ``turn_gold="evidence"``: at turn granularity, a request whose notes give evidence
    turns and that does not name a whole conversation gets v* from its evidence turns
    (:func:`evidence_version`); every other request keeps the session boundary."""
    path = Path(path)
    if turn_gold not in ("session", "evidence"):
        raise UserQueryError(f"turn_gold={turn_gold!r}: use 'session' or 'evidence'")
    lines = read_query_lines(path)
    evidence: list[list[str] | None] | None = None
    if turn_gold == "evidence":
        # The lines' own ``evidence`` fields when the file has them, else its notes file,
        # else the turns its claims name.
        if any("evidence" in rec for _, rec in lines):
            evidence = [rec.get("evidence") or None for _, rec in lines]
        elif not path.with_name(path.stem + ".notes.md").is_file() and any(
            "claim" in rec for _, rec in lines
        ):
            evidence = [claim_evidence(rec.get("claim")) for _, rec in lines]
        else:
            evidence = notes_evidence(path)
    by_sample = {s.sample_id: s for s in built.streams}
    out: list[RollbackQuery] = []
    seen: dict[str, int] = {}
    pools: dict[str, ProbePool] = {}
    for n_line, (line, rec) in enumerate(lines, start=1):
        stream = by_sample.get(rec["sample_id"])
        if stream is None:
            known = ", ".join(sorted(by_sample)[:5])
            raise _err(
                path, line, "sample_id", f"{rec['sample_id']!r} not in this dataset (e.g. {known})"
            )
        intent = rec.get("intent", "restore_to")  # checked by read_query_lines
        refuse = rec.get("expect") == "refuse"
        v_star = stream.n_versions if refuse else _target(rec, stream, path, line)
        if evidence is not None and stream.granularity == "turn":
            if n_line > len(evidence):
                raise _err(path, line, None, "no row for this line in the notes file")
            ev = evidence[n_line - 1]
            if ev and not refuse and not NAMES_CONVERSATION.search(rec["query"]):
                v_ev = evidence_version(stream, ev, intent)
                if v_ev is None:
                    raise _err(path, line, None, f"evidence {ev} not in the stream")
                v_star = v_ev
        # Content-based id: editing a line gives the request a new id (its old samples are
        # never resumed), and reordering lines changes nothing.
        qid = f"{stream.stream_id}/user/{_content_id(rec, intent, v_star)}"
        if qid in seen:
            raise _err(path, line, "query", f"repeats line {seen[qid]} (same request and target)")
        seen[qid] = line
        pool = pools.get(stream.stream_id)
        if pool is None and built.pools.get(stream.stream_id):
            # Validated once per stream (attach_probes only reads it), not once per line.
            pool = pools[stream.stream_id] = ProbePool.model_validate(built.pools[stream.stream_id])
        text = rec["query"].strip()
        probes = attach_probes(pool, stream, qid, v_star, request=text) if pool is not None else []
        out.append(
            RollbackQuery(
                query_id=qid,
                stream_id=stream.stream_id,
                text=text,
                intent=intent,
                source="user",
                target_version=v_star,
                probes=probes,
                meta={
                    "file": path.name,
                    "line": line,
                    **({"style": rec["style"]} if "style" in rec else {}),
                    **({"expect": "refuse"} if refuse else {}),
                },
            )
        )
    # Consistent forgetting: each future question once more at the last version.
    add_final_probes(out, pools.values(), built.streams)
    return out

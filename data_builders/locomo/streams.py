"""LoCoMo conversations as version streams at session, turn or observation granularity.

Indexed content (what systems see) comes only from ``conversation`` turns (session and
turn granularity) or from ``observation`` records (observation granularity); never from
``event_summary``, ``session_summary`` or ``qa``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chronobench.data.schema import MemoryOp, Stream, Write
from data_builders.locomo.source import parse_evidence, session_numbers

GRANULARITIES = ("session", "turn", "observation")


@dataclass
class StreamBuild:
    """A stream plus where each dialog id and session landed on its timeline."""

    stream: Stream
    # dialog id -> (earliest, latest) version at which its content is committed
    dia_range: dict[str, tuple[int, int]] = field(default_factory=dict)
    # session -> (first, last) version of its writes; absent when it has no writes
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    dates: dict[int, str] = field(default_factory=dict)
    known_ids: set[str] = field(default_factory=set)


def turn_text(turn: dict[str, Any]) -> str:
    """``Speaker: text``, plus the shared image's caption when there is one."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text += f" [shares {caption.strip()}]"
    return text


def stamped(text: str, date: str) -> str:
    """Prefix a memory text with its session date, as an agent timestamps what it saves:
    without it, relative times ("yesterday") in a turn cannot be resolved."""
    return f"[{date}] {text}" if date else text


def _turn_op(turn: dict[str, Any], date: str) -> MemoryOp:
    return MemoryOp(
        op="add",
        item_id=turn["dia_id"],
        text=stamped(turn_text(turn), date),
        meta={"speaker": turn["speaker"], "date": date},
    )


def observations(rec: dict[str, Any], n: int) -> list[tuple[str, str, list[str]]]:
    """``(speaker, text, dialog ids)`` of session ``n``, in dialog order."""
    block = rec.get("observation", {}).get(f"session_{n}_observation") or {}
    rows: list[tuple[tuple[int, int, int], str, str, list[str]]] = []
    for s_idx, (speaker, recs) in enumerate(block.items()):
        for r_idx, r in enumerate(recs or []):
            if not isinstance(r, list) or len(r) != 2 or not isinstance(r[0], str):
                continue
            ids, _ = parse_evidence(r[1] if isinstance(r[1], list) else [r[1]])
            first = min((int(i.split(":")[1]) for i in ids), default=10**6)
            rows.append(((first, s_idx, r_idx), speaker, r[0], ids))
    rows.sort(key=lambda x: x[0])
    return [(sp, text, ids) for _, sp, text, ids in rows]


def build_stream(rec: dict[str, Any], granularity: str) -> StreamBuild:
    """Turn one LoCoMo record into a stream at the given granularity."""
    conv = rec["conversation"]
    sid = rec["sample_id"]
    writes: list[Write] = []
    out = StreamBuild(stream=None)  # type: ignore[arg-type]
    for n in session_numbers(conv):
        turns = conv[f"session_{n}"]
        date = str(conv.get(f"session_{n}_date_time", ""))
        out.dates[n] = date
        out.known_ids.update(t["dia_id"] for t in turns)
        first = len(writes) + 1
        base = {"session": n, "session_date": date}
        if granularity == "session":
            if turns:
                v = first
                writes.append(
                    Write(
                        version=v,
                        ops=[_turn_op(t, date) for t in turns],
                        labels={**base, "dialog_ids": [t["dia_id"] for t in turns]},
                        valid_time=date or None,
                    )
                )
                for t in turns:
                    out.dia_range[t["dia_id"]] = (v, v)
        elif granularity == "turn":
            for t in turns:
                v = len(writes) + 1
                writes.append(
                    Write(
                        version=v,
                        ops=[_turn_op(t, date)],
                        labels={**base, "dialog_ids": [t["dia_id"]], "speaker": t["speaker"]},
                        valid_time=date or None,
                    )
                )
                out.dia_range[t["dia_id"]] = (v, v)
        elif granularity == "observation":
            for k, (speaker, text, ids) in enumerate(observations(rec, n), start=1):
                v = len(writes) + 1
                writes.append(
                    Write(
                        version=v,
                        ops=[
                            MemoryOp(
                                op="add",
                                item_id=f"S{n}:obs{k}",
                                text=stamped(text, date),
                                meta={"speaker": speaker, "date": date, "dialog_ids": ids},
                            )
                        ],
                        labels={**base, "dialog_ids": ids, "speaker": speaker},
                        valid_time=date or None,
                    )
                )
                for i in ids:
                    if i not in out.dia_range:  # first observation citing a turn commits it
                        out.dia_range[i] = (v, v)
        else:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")
        last = len(writes)
        if last >= first:
            out.spans[n] = (first, last)
            if granularity == "observation":
                # A turn no observation cites is at most "somewhere in this session".
                for t in turns:
                    out.dia_range.setdefault(t["dia_id"], (first, last))
    out.stream = Stream(
        stream_id=f"locomo/{granularity}/{sid}",
        dataset="locomo",
        granularity=granularity,
        sample_id=sid,
        writes=writes,
        meta={
            "speakers": [conv["speaker_a"], conv["speaker_b"]],
            "sessions": sorted(out.spans),
        },
    )
    return out

"""Restore fidelity: a system's state after a rollback to the true v*, against the gold
state at v* (the stream's writes 1..v*, not any system's snapshot).

Per rollback:
- ``missing``: gold items the state lacks; ``extra``: state items not in the gold (a
  discarded write that survived, or a duplicate); ``stale``: a gold item present with
  different text.
- ``leaked``: of the discarded items probed, how many a search for their own text still
  returns (the content of a discarded write, found again after the rollback).
- ``on_disk``: of the discarded items probed, how many still have their UTF-8 text in a
  file the system wrote (a lower bound: compressed copies are not found).

Works on any :class:`~chronobench.systems.peers.base.PeerMemory`, ChronoMem included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass
class Fidelity:
    """Counts for one rollback (rates are taken over many in :func:`summarize`)."""

    gold: int
    missing: int
    extra: int
    stale: int
    probes: int
    leaked: int
    on_disk: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def gold_state(writes: Sequence[Any], version: int) -> dict[str, str]:
    """``{item id: text}`` after writes ``1..version`` (add-only peer writes)."""
    out: dict[str, str] = {}
    for w in writes:
        if w.version > version:
            break
        for item_id, text in w.items:
            out[item_id] = text
    return out


def discarded_items(writes: Sequence[Any], version: int) -> list[tuple[str, str]]:
    """Items written after ``version`` (what the rollback must drop)."""
    return [(i, t) for w in writes if w.version > version for i, t in w.items]


def compare_state(state: Iterable[Any], gold: dict[str, str]) -> tuple[int, int, int]:
    """``(missing, extra, stale)`` of ``state`` (Memory records) against ``gold``.

    Items are matched by id; a record without an id matches an unmatched gold item of
    the same text, else counts as extra. A second record of one id is extra.
    """
    seen: set[str] = set()
    extra = stale = 0
    by_text: dict[str, list[str]] = {}
    for item_id, text in gold.items():
        by_text.setdefault(text, []).append(item_id)
    anonymous = []
    for m in state:
        if m.item_id is None:
            anonymous.append(m)
            continue
        if m.item_id not in gold or m.item_id in seen:
            extra += 1
            continue
        seen.add(m.item_id)
        if m.text != gold[m.item_id]:
            stale += 1
    for m in anonymous:
        free = [i for i in by_text.get(m.text, []) if i not in seen]
        if free:
            seen.add(free[0])
        else:
            extra += 1
    return len(gold) - len(seen), extra, stale


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` evenly spaced elements of ``items`` (all when there are fewer)."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def leakage(
    peer: Any, discarded: Sequence[tuple[str, str]], gold: dict[str, str], *, k: int, probes: int
) -> tuple[int, int]:
    """``(probed, leaked)``: search each probed discarded item's text; a hit whose text is a
    discarded text (and not also a kept one) is leaked content."""
    kept = set(gold.values())
    gone = {t for _, t in discarded} - kept
    sample = [(i, t) for i, t in spread(discarded, probes) if t in gone]
    leaked = sum(1 for _, text in sample if any(h.text in gone for h in peer.search(text, k)))
    return len(sample), leaked


def retained_on_disk(
    files: Iterable[Path], discarded: Sequence[tuple[str, str]], gold: dict[str, str], probes: int
) -> int:
    """How many of the probed discarded texts appear byte-for-byte in ``files``."""
    kept = set(gold.values())
    needles = [t.encode("utf-8") for _, t in spread(discarded, probes) if t not in kept]
    blobs = []
    for f in files:
        try:
            blobs.append(Path(f).read_bytes())
        except OSError:
            continue
    return sum(1 for n in needles if any(n in b for b in blobs))


def measure(
    peer: Any,
    writes: Sequence[Any],
    version: int,
    *,
    files: Iterable[Path] = (),
    k: int = 5,
    probes: int = 10,
) -> Fidelity:
    """Fidelity of ``peer`` (already rolled back to ``version``) against the gold."""
    gold = gold_state(writes, version)
    discarded = discarded_items(writes, version)
    missing, extra, stale = compare_state(peer.state(), gold)
    probed, leaked = leakage(peer, discarded, gold, k=k, probes=probes)
    on_disk = retained_on_disk(files, discarded, gold, probes)
    return Fidelity(len(gold), missing, extra, stale, probed, leaked, on_disk)


def summarize(rows: Sequence[Fidelity]) -> dict[str, float]:
    """Rates over many rollbacks, in percent: missing and stale per gold item, extra per
    gold item, leaked and on-disk per probed discarded item, and the share of rollbacks
    restored exactly (nothing missing, extra or stale)."""
    gold = sum(r.gold for r in rows) or 1
    probed = sum(r.probes for r in rows) or 1
    n = len(rows) or 1
    return {
        "rollbacks": float(len(rows)),
        "exact": 100.0 * sum(1 for r in rows if not (r.missing or r.extra or r.stale)) / n,
        "missing": 100.0 * sum(r.missing for r in rows) / gold,
        "extra": 100.0 * sum(r.extra for r in rows) / gold,
        "stale": 100.0 * sum(r.stale for r in rows) / gold,
        "leaked": 100.0 * sum(r.leaked for r in rows) / probed,
        "on_disk": 100.0 * sum(r.on_disk for r in rows) / probed,
    }

"""Replay that is not exact: a seeded noise model on every backbone call, the failed
run's prompt memo, and sessions that cannot be re-run.

:class:`CallLayer` sits between the agent and the backbone for a whole case (the failed
run and the repair alike). It keeps the failed run's replies by prompt (the memo a
prompt-memoised replay reuses) and, when a :class:`NoiseModel` is set, perturbs every
reply line ``slot = value [refs]`` the way an imperfect reader would:

- **reading slip**: the value of an older shown record that states the slot, cited;
- **citation omission**: the line's citations are dropped (the agent then records
  the whole prompt as its evidence);
- **wrong citation**: the line cites another shown record instead.

Each event fires when a uniform draw falls under the rate; the draw is a hash of the
seed, the event kind, the line and the call's key, never of the rate, so a slip at rate
0.05 is also a slip at 0.1 (the sweep's curves are coupled). The key is
``(occasion, prompt sha256, n-th asking of that prompt in that occasion)`` with
occasion ``run`` for the failed run and ``repair`` for the repair: a re-run of an
unchanged prompt draws afresh, as a sampling LLM would. Keyed by the prompt alone
(``key="prompt"``) a re-run reproduces the failed run's reply exactly and a
prompt-memoised replay is the same as a re-run. The gold run stays noise-free.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chronobench.protocols import Completion
from chronobench.tracks.repair.agent import reply_text
from chronobench.tracks.repair.domains import parse_record
from chronobench.tracks.repair.lexicon import read_pairs
from chronobench.tracks.repair.policy import asked_slots, domain_of, split_prompt

_LINE = re.compile(r"^(\s*[-*]?\s*`?)([A-Za-z_ ]+?)(`?\s*=\s*)(.*?)(\s*\[([^\[\]]*)\])?\s*$")
KINDS = ("slip", "omit", "miscite")


def prompt_key(req: Any) -> str:
    """sha256 of a request's messages (role and text): the memo key of a call."""
    blob = "\n\x00".join(f"{m.role}\x01{m.content}" for m in req.messages)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class NoiseModel:
    """Per-line event rates; ``key`` is ``call`` (fresh draws per asking) or ``prompt``."""

    slip: float = 0.0
    omit: float = 0.0
    miscite: float = 0.0
    seed: int = 0
    key: str = "call"

    @classmethod
    def uniform(cls, rate: float, seed: int = 0, key: str = "call") -> NoiseModel:
        """Every event kind at ``rate``."""
        return cls(rate, rate, rate, seed, key)

    @property
    def active(self) -> bool:
        """Whether any event can fire."""
        return max(self.slip, self.omit, self.miscite) > 0

    def draw(self, kind: str, call: str, line: int) -> float:
        """A uniform number in [0, 1) for one event of one line of one call."""
        h = hashlib.sha256(f"{self.seed}|{kind}|{call}|{line}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64

    def apply(self, req: Any, reply: str, call: str) -> str:
        """``reply`` with this model's events applied (``call`` keys the draws)."""
        shown, question = split_prompt(req)
        domain = domain_of(asked_slots(question))
        refs_all = [r for r, _ in shown]
        out = []
        for n, line in enumerate(reply.splitlines()):
            m = _LINE.match(line)
            if not m or domain is None:
                out.append(line)
                continue
            key, value = m.group(2).strip().lower().replace(" ", "_"), m.group(4)
            refs = [r.strip() for r in (m.group(6) or "").split(",") if r.strip()]
            if refs and "input" not in refs and self.draw("slip", call, n) < self.slip:
                older = _older_value(shown, key, value, domain)
                if older:
                    value, refs = older
            if refs and self.draw("omit", call, n) < self.omit:
                refs = []
            if refs and self.draw("miscite", call, n) < self.miscite:
                others = [r for r in refs_all if r not in refs]
                if others:
                    refs = [others[int(self.draw("pick", call, n) * len(others))]]
            cite = f" [{', '.join(refs)}]" if refs else ""
            out.append(f"{m.group(1)}{m.group(2)}{m.group(3)}{value}{cite}")
        return "\n".join(out)


def _older_value(
    shown: Sequence[tuple[str, str]], slot: str, value: str, domain: str
) -> tuple[str, list[str]] | None:
    """(value, [ref]) of the newest shown record stating ``slot`` with another value."""
    best = None
    for pos, (ref, text) in enumerate(shown):
        parsed = parse_record(text)
        day = parsed[0] if parsed else 0
        for s, v in read_pairs(text, domain):
            if s == slot and v != value and (best is None or (day, pos) >= best[:2]):
                best = (day, pos, v, ref)
    return (best[2], [best[3]]) if best else None


class CallLayer:
    """The backbone of one case as the agent sees it: noise (if any), the failed run's
    memo, and a count of calls per occasion."""

    def __init__(self, inner: Any, noise: NoiseModel | None = None) -> None:
        self.inner, self.noise = inner, noise if noise and noise.active else None
        self.occasion = "run"
        self.memo: dict[str, str] = {}  # prompt sha256 -> the failed run's reply
        self.asked: Counter[tuple[str, str]] = Counter()
        self.calls: Counter[str] = Counter()
        # A language model's replies: what did not parse, by kind (None: not counted, the
        # offline policy).
        self.parse: Counter[str] | None = None

    def generate(self, requests: Sequence[Any]) -> list[Completion]:
        """The inner backbone's replies, perturbed and recorded."""
        replies = self.inner.generate(list(requests)) if requests else []
        out = []
        for req, reply in zip(requests, replies, strict=True):
            text, key = reply_text(reply), prompt_key(req)
            n = self.asked[(self.occasion, key)]
            self.asked[(self.occasion, key)] += 1
            if self.noise:
                call = key if self.noise.key == "prompt" else f"{self.occasion}|{key}|{n}"
                text = self.noise.apply(req, text, call)
            if self.occasion == "run":
                self.memo.setdefault(key, text)
            if self.parse is not None:
                from chronobench.tracks.repair.replies import reply_failures

                failed = reply_failures(req, text)
                self.parse.update(failed)
                self.parse["failed_replies"] += bool(failed)
            out.append(Completion(text))
        self.calls[self.occasion] += len(requests)
        return out


class MemoBackbone:
    """A prompt-memoised backbone: a prompt byte-identical to one of the failed run gets
    that run's reply without a call; every other prompt goes to ``inner``."""

    def __init__(self, inner: Any, memo: dict[str, str]) -> None:
        self.inner, self.memo = inner, memo
        self.hits = 0

    def generate(self, requests: Sequence[Any]) -> list[Completion]:
        """Memo hits answered from the memo, the rest from ``inner``, in order."""
        keys = [prompt_key(r) for r in requests]
        misses = [r for r, k in zip(requests, keys, strict=True) if k not in self.memo]
        fresh = iter(self.inner.generate(misses) if misses else [])
        out = []
        for k in keys:
            if k in self.memo:
                self.hits += 1
                out.append(Completion(self.memo[k]))
            else:
                out.append(Completion(reply_text(next(fresh))))
        return out


def unreplayable(view: dict[str, Any], retention: int | None) -> set[str]:
    """Sessions a repair cannot re-run when inputs are kept ``retention`` days: every
    pasted document (one-off text, not kept) and every session older than the window.
    None: every session can be re-run."""
    if retention is None:
        return set()
    today = int(view["task_day"])
    return {
        ev["event"]
        for ev in view["events"]
        if ev["kind"] == "paste" or today - int(ev["day"]) > int(retention)
    }

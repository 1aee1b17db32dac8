"""The validity contract a headline declares, and the verdict on it.

A headline is only evidence of the task when three things hold, and the audit checks all
three on data, through the track's real scorer:

- **the oracle is the ceiling**: the track's oracle (the gold action, taken through the
  same harness as a system row) scores at least as much as anything else measured;
- **every wrong action costs**: an error curve starts at the oracle and adds ``k`` wrong
  actions of the track's own kind (a version off by ``k`` sessions, ``k`` extra turns
  removed, ``k`` later sessions' words in a summary, ``k`` extra sessions re-run); its
  score must fall strictly as ``k`` grows. The slope says what one wrong action costs in
  headline points;
- **no shortcut reaches the system**: attack families (request-blind policies,
  over-action sweeps, fixed texts built from the public writes, surface rules the
  generator's construction implies) each report their best member, which must stay below
  the oracle and below the lower end of the headline system's interval.

A track's audit function builds one :class:`HeadlineAudit`; :meth:`HeadlineAudit.failures`
is the verdict, the same for every track.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AUDIT_VERSION",
    "ATTACK_FAMILIES",
    "Attack",
    "Curve",
    "HeadlineAudit",
    "Interval",
]

#: Bumped when a field of the audit files changes meaning.
AUDIT_VERSION = 1

#: The attack families every contract considers (a track states "none applies" by
#: listing a family in ``not_applicable`` with the reason).
ATTACK_FAMILIES = {
    "request_blind": "never reads the request (fixed fraction or prefix of the stream, "
    "a prior over positions, per-item answer/abstain splits, question-reading)",
    "over_action": "does more than asked (delete the top k hits, restore every candidate)",
    "fixed_text": "the same output for every query, built from the public writes",
    "surface_rule": "a rule the generator's own construction implies, read off the surface",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Interval(_Model):
    """A figure in [0, 1] with its 95% interval (``lo`` = ``hi`` = ``mean`` when none)."""

    mean: float
    lo: float
    hi: float
    n: int = 0

    @classmethod
    def point(cls, value: float, n: int = 0) -> Interval:
        return cls(mean=value, lo=value, hi=value, n=n)


class Curve(_Model):
    """Oracle plus ``k`` wrong actions: ``points`` are ``(k, score)``, ``k = 0`` first."""

    name: str
    action: str  # what one wrong action is, in words
    points: list[tuple[int, float]]

    def strictly_decreasing(self) -> bool:
        scores = [s for _, s in sorted(self.points)]
        return len(scores) >= 2 and all(b < a for a, b in zip(scores, scores[1:], strict=False))

    def slope(self) -> float:
        """Least-squares headline change per wrong action (negative: each one costs)."""
        pts = sorted(self.points)
        n = len(pts)
        if n < 2:
            return 0.0
        mk = sum(k for k, _ in pts) / n
        ms = sum(s for _, s in pts) / n
        var = sum((k - mk) ** 2 for k, _ in pts)
        return sum((k - mk) * (s - ms) for k, s in pts) / var if var else 0.0


class Attack(_Model):
    """One member of an attack family and the headline it earned."""

    family: str
    name: str
    score: float
    note: str = ""


class HeadlineAudit(_Model):
    """One headline's contract and what the audit measured of it."""

    version: int = AUDIT_VERSION
    track: str
    headline: str  # the metric, as the board names it
    system: str  # the row whose interval the attacks must stay below
    interval: Interval
    oracle_name: str
    oracle_why: str  # why it is a ceiling
    oracle: float
    curves: list[Curve]
    attacks: list[Attack]
    not_applicable: dict[str, str] = Field(default_factory=dict)  # family -> reason
    data: str  # what it ran on (dataset, streams, fast or full)
    notes: list[str] = Field(default_factory=list)

    def best_attacks(self) -> dict[str, Attack]:
        """The best-scoring attack of each family (ties: the first listed)."""
        best: dict[str, Attack] = {}
        for attack in self.attacks:
            if attack.family not in best or attack.score > best[attack.family].score:
                best[attack.family] = attack
        return best

    def failures(self) -> list[str]:
        """Every broken property, in words (empty: the headline passes its audit)."""
        out: list[str] = []
        unknown = {a.family for a in self.attacks} - set(ATTACK_FAMILIES)
        if unknown:
            out.append(f"unknown attack families {sorted(unknown)}")
        covered = {a.family for a in self.attacks} | set(self.not_applicable)
        for family in ATTACK_FAMILIES:
            if family not in covered:
                out.append(f"attack family {family!r} neither run nor declared not applicable")
        if not self.curves:
            out.append("no error curve")
        for curve in self.curves:
            if not curve.strictly_decreasing():
                out.append(f"curve {curve.name!r} does not fall strictly: {curve.points}")
            elif curve.points[0][1] > self.oracle + 1e-9:
                out.append(f"curve {curve.name!r} starts above the oracle")
        for family, attack in self.best_attacks().items():
            if attack.score >= self.oracle - 1e-9:
                out.append(f"{family} attack {attack.name!r} reaches the oracle "
                           f"({attack.score:.3f} >= {self.oracle:.3f})")  # fmt: skip
            if attack.score >= self.interval.lo - 1e-9:
                out.append(f"{family} attack {attack.name!r} reaches {self.system}'s interval "
                           f"({attack.score:.3f} >= {self.interval.lo:.3f})")  # fmt: skip
        if self.interval.mean > self.oracle + 1e-9:
            out.append(f"{self.system} ({self.interval.mean:.3f}) is above the oracle "
                       f"({self.oracle:.3f}): the oracle is not a ceiling")  # fmt: skip
        return out

    @property
    def passes(self) -> bool:
        return not self.failures()

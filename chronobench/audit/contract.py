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
is the verdict, the same for every track. The verdict certifies the *metric*. Whether the
system beats a competitor that does the task by other means (a :class:`Baseline`, such as
the repair track's graph-free planners) is a separate, plainly stated comparison
(:meth:`HeadlineAudit.comparison`), shown beside the verdict and never folded into it: a
competitor that repairs correctly is evidence that the figure rewards repair, not that it
can be won without it. A headline marked ``control`` is a published control set (its
verdict is computed and shown, but it is not a headline).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AUDIT_VERSION",
    "ATTACK_FAMILIES",
    "Attack",
    "Baseline",
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
    """A figure with its 95% interval (``lo`` = ``hi`` = ``mean`` when none): a score in
    [0, 1], or a paired margin in [-1, 1]."""

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


class Baseline(_Model):
    """A competitor that does the task by other means, and the system's margin over it.

    ``margin``: the system minus the baseline, paired per case (None when the two were
    not scored on the same cases); ``better`` / ``worse``: cases where the system scores
    higher / lower.
    """

    name: str
    score: float
    note: str = ""
    margin: Interval | None = None
    better: int = 0
    worse: int = 0

    def beaten(self, system: Interval) -> bool:
        """Does the system beat it? Paired: the margin's interval lies above 0; unpaired
        (no margin): the baseline lies below the system's interval."""
        if self.margin is not None:
            return self.margin.lo > 1e-9
        return self.score < system.lo - 1e-9


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
    # Competitors that do the task by other means: compared, not attacks (module doc).
    baselines: list[Baseline] = Field(default_factory=list)
    # Non-empty: a published control set, not a headline; the reason, in words.
    control: str = ""

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
        # A competitor may tie the oracle (it does the task), never exceed it.
        for base in self.baselines:
            if base.score > self.oracle + 1e-9:
                out.append(f"baseline {base.name!r} ({base.score:.3f}) is above the oracle "
                           f"({self.oracle:.3f}): the oracle is not a ceiling")  # fmt: skip
        return out

    def unbeaten(self) -> list[Baseline]:
        """The baselines the system does not beat, strongest first."""
        rest = [b for b in self.baselines if not b.beaten(self.interval)]
        return sorted(rest, key=lambda b: -b.score)

    def comparison(self) -> str:
        """One plain sentence: does the system beat every baseline? (empty: none)."""
        if not self.baselines:
            return ""
        sys_name = self.system.split(" (")[0]
        unbeaten = self.unbeaten()
        if unbeaten:
            base, verb = unbeaten[0], "does not beat"
        else:
            base, verb = (
                max(self.baselines, key=lambda b: b.score),
                "beats every baseline; the strongest is",
            )
        text = f"{sys_name} {verb} {base.name} ({100 * base.score:.1f} against {100 * self.interval.mean:.1f})"
        if base.margin is not None:
            m = base.margin
            text += (f": {sys_name} minus it, paired per case, {100 * m.mean:+.1f} "
                     f"[{100 * m.lo:+.1f}, {100 * m.hi:+.1f}], higher on {base.better} cases, "
                     f"lower on {base.worse}")  # fmt: skip
        if len(unbeaten) > 1:
            text += f"; {len(unbeaten) - 1} other baseline(s) not beaten either"
        return text + "."

    def verdict(self) -> str:
        """The verdict cell: the metric's verdict, whether it is a control, and the
        comparison with the strongest baseline the system does not beat."""
        out = "passes" if self.passes else "FAILS"
        if self.control:
            out += " (control set, not a headline)"
        if self.baselines:
            unbeaten = self.unbeaten()
            out += (f"; does not beat {unbeaten[0].name} ({100 * unbeaten[0].score:.1f})"
                    if unbeaten else "; beats every baseline")  # fmt: skip
        return out

    @property
    def passes(self) -> bool:
        return not self.failures()

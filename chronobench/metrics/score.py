"""Per-sample scoring of a probe's prediction, and aggregation of per-sample rows.

Field names are documented in :mod:`chronobench.metrics` and are read by the
leaderboard; change them only together with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from numbers import Real

from chronobench.data.schema import Probe
from chronobench.metrics.bootstrap import summarise
from chronobench.metrics.qa import best_f1, leaked, locomo_em, locomo_f1, substring_em
from chronobench.metrics.summary import rouge1, summary_leakage
from chronobench.metrics.text import is_abstention

__all__ = ["aggregate", "score_probe"]


def _score_answerable(probe: Probe, prediction: str) -> dict[str, float]:
    abstained = float(is_abstention(prediction))
    mab = probe.scoring == "mab"
    if probe.category == 5 or not probe.answers:
        # Adversarial / unanswerable: the right behaviour is to abstain.
        f1 = em = abstained
    elif mab:
        f1 = best_f1(prediction, probe.answers)
        em = substring_em(prediction, probe.answers)
    else:
        f1 = max(locomo_f1(prediction, g, probe.category) for g in probe.answers)
        em = max(locomo_em(prediction, g, probe.category) for g in probe.answers)
    em_key = "substring_em" if mab else "qa_em"
    out = {"qa_f1": f1, em_key: em, "qa_abstained": abstained, "rc_qa": f1}
    if probe.category != 5 and probe.answers:
        # F1 on questions that have an answer: abstaining earns nothing here, so it
        # separates reading from refusing (category 5 rewards abstention).
        out["qa_f1_answered"] = f1
    return out


def _score_future(probe: Probe, prediction: str) -> dict[str, float]:
    abstain = float(is_abstention(prediction))
    out = {"future_abstain": abstain, "rc_qa": abstain}
    if probe.future_answers:
        out["future_leak"] = leaked(prediction, probe.future_answers)
    return out


def _score_summary(probe: Probe, prediction: str) -> dict[str, float]:
    if probe.reference is None:
        raise ValueError(
            f"probe {probe.probe_id}: summary probe has no 'reference'; the dataset "
            "builder must set the reference summary of the target scope"
        )
    out = {"rouge1": rouge1(prediction, probe.reference)}
    if probe.future_references:
        out["summary_leakage"] = summary_leakage(prediction, probe.future_references)
    return out


def score_probe(probe: Probe, prediction: str) -> dict[str, float]:
    """Score one prediction for one probe; returns the fields relevant to its kind.

    - ``qa`` (answerable): ``qa_f1``, ``qa_em`` (LoCoMo) or ``substring_em`` (MAB),
      ``qa_abstained``, ``rc_qa`` (= ``qa_f1``).
    - ``future_qa``: ``future_abstain``, ``rc_qa`` (= ``future_abstain``) and, when the
      probe carries ``future_answers``, ``future_leak``.
    - ``summary``: ``rouge1`` and, when it carries ``future_references``,
      ``summary_leakage``.
    """
    if not isinstance(prediction, str):
        raise TypeError(
            f"probe {probe.probe_id}: prediction must be a str, got {type(prediction).__name__}"
        )
    if probe.kind == "qa":
        return _score_answerable(probe, prediction)
    if probe.kind == "future_qa":
        return _score_future(probe, prediction)
    if probe.kind == "summary":
        return _score_summary(probe, prediction)
    raise ValueError(f"probe {probe.probe_id}: unknown kind {probe.kind!r}")


def aggregate(
    per_sample_rows: Iterable[Mapping[str, object]], seed: int = 0, n_resamples: int = 1000
) -> dict[str, dict[str, float | int | None]]:
    """Summarise every numeric field across rows: ``{field: {n, mean, ci_low, ci_high}}``.

    Each row is a per-sample score dict (from :func:`score_probe` or
    :func:`~chronobench.metrics.score_selection`); a field missing from a row, or set to
    ``None``, is not counted for that row. Non-numeric values are ignored. Fields come
    out sorted by name so output files are stable.
    """
    columns: dict[str, list[float]] = {}
    for row in per_sample_rows:
        for key, value in row.items():
            if value is None or isinstance(value, str) or not isinstance(value, Real):
                continue
            columns.setdefault(key, []).append(float(value))
    return {
        key: summarise(columns[key], seed=seed, n_resamples=n_resamples) for key in sorted(columns)
    }

"""Per-sample scoring of a probe's prediction, and aggregation of per-sample rows.

Field names are documented in :mod:`chronobench.metrics` and are read by the
leaderboard; change them only together with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from numbers import Real

from chronobench.data.schema import Probe
from chronobench.metrics.bootstrap import summarise
from chronobench.metrics.catalog import PROBE_KINDS, declare_metric, plugin_scorers, probe_scorer
from chronobench.metrics.qa import (
    CORRECT_THRESHOLD,
    NOT_MENTIONED_OPTION,
    affirms,
    best_f1,
    best_locomo,
    denies,
    leaked,
    locomo_em,
    picked_option,
    says_no,
    substring_em,
)
from chronobench.metrics.summary import (
    LEAK_GATE,
    content_rouge1,
    rouge1,
    session_coverage,
    specific_rouge1,
    summary_leakage,
)
from chronobench.metrics.text import is_abstention
from chronobench.text import first_words

__all__ = ["aggregate", "score_probe"]


# Each probe scorer is declared with the probe kind it scores (the table score_probe looks
# a probe up in) and the metrics it writes that tables show (chronobench.metrics.catalog).


def _score_adversarial(probe: Probe, prediction: str) -> dict[str, float]:
    # LoCoMo category 5: a two-way choice; right = the "not mentioned" option. Probes
    # built before the choice format carry no options: abstaining is the right pick.
    abstained = float(is_abstention(prediction))
    options = probe.meta.get("options")
    if options:
        pick = picked_option(prediction, options)
        correct = float(pick is not None and options[pick] == NOT_MENTIONED_OPTION)
    else:
        correct = abstained
    return {"adversarial_acc": correct, "qa_abstained": abstained}


# Recall probes: "Is it true that <statement>?" (docs/metrics.md). Protocol 3 asks true and
# false statements (``meta["truth"]``). Kept side: right = "Yes" to a true one and an
# explicit "No" to a false one (abstaining is wrong: the memory holds the fact). Forgotten
# side: right = abstaining, on both (the memory at v* has no say; "Yes" to a true one or
# "No" to a false one shows the fact was not forgotten). Own fields, so the LoCoMo columns
# (A, B, leakage) keep the dataset's questions only.
def _said(probe: Probe, prediction: str) -> bool:
    """The reply states the statement's truth value ("Yes" to a true one, "No" to a false one)."""
    return affirms(prediction) if probe.meta.get("truth") is not False else says_no(prediction)


@declare_metric(
    "recall_acc",
    "rq2",
    "recall: right yes / no at v* (true and false, session at v*)",
    order=90,
)
@probe_scorer("recall/qa")
def _score_recall_kept(probe: Probe, prediction: str) -> dict[str, float]:
    return {"recall_acc": float(_said(probe, prediction))}


@declare_metric("recall_forget", "rq2", "recall: abstains (first session after v*)", order=100)
@probe_scorer("recall/future_qa")
def _score_recall_forgotten(probe: Probe, prediction: str) -> dict[str, float]:
    said = float(_said(probe, prediction))
    if probe.meta.get("truth") is None:
        # A protocol-2 probe (true statements only): "No" counted as forgetting.
        return {"recall_forget": float(denies(prediction)), "recall_leak": said}
    return {"recall_forget": float(is_abstention(prediction)), "recall_leak": said}


@probe_scorer("recall/final_qa")
def _score_recall_final(probe: Probe, prediction: str) -> dict[str, float]:
    # Writes final_correct too (declared on _score_final).
    said = float(_said(probe, prediction))
    return {"final_correct": said, "final_abstain": float(is_abstention(prediction))}


@declare_metric(
    "qa_f1",
    "rq2",
    "A: answerable F1 (cat 1-4)",
    order=50,
    title="RQ2: A, answerable F1, LoCoMo category rules, categories 1-4",
    short="A:F1",
)
@declare_metric(
    "adversarial_acc",
    "rq2",
    "adversarial acc. (cat 5)",
    order=80,
    title="RQ2: adversarial accuracy (category 5, two-way choice; not in RC-QA)",
    short="Adv",
)
@declare_metric("qa_abstained", "rq2", "abstains on answerable", order=110, higher_is_better=False)
@probe_scorer("qa")
def _score_answerable(probe: Probe, prediction: str) -> dict[str, float]:
    if probe.category == 5:
        return _score_adversarial(probe, prediction)
    abstained = float(is_abstention(prediction))
    if not probe.answers:
        # No gold answer and not adversarial: only abstaining is right; kept out of A.
        return {"unanswerable_abstain": abstained, "qa_abstained": abstained}
    if abstained:
        # An abstention gives no answer: its words ("not", "information") overlapping a
        # gold answer are not a partial answer. So always abstaining has A = 0 exactly.
        em_key = "substring_em" if probe.scoring == "mab" else "qa_em"
        return {"qa_f1": 0.0, em_key: 0.0, "qa_abstained": 1.0}
    if probe.scoring == "mab":
        f1 = best_f1(prediction, probe.answers)
        return {
            "qa_f1": f1,
            "substring_em": substring_em(prediction, probe.answers),
            "qa_abstained": abstained,
        }
    f1 = best_locomo(prediction, probe.answers, probe.category)
    em = max(locomo_em(prediction, g, probe.category) for g in probe.answers)
    return {"qa_f1": f1, "qa_em": em, "qa_abstained": abstained}


@declare_metric(
    "future_abstain",
    "rq2",
    "B: future abstention",
    order=60,
    title="RQ2: B, abstention on future-evidence probes",
    short="B:Abst",
)
@declare_metric(
    "future_leak",
    "rq2",
    "leakage (lower is better)",
    order=70,
    higher_is_better=False,
    title="RQ2: leakage on future-evidence probes (lower is better)",
    short="Leak",
)
@probe_scorer("future_qa")
def _score_future(probe: Probe, prediction: str) -> dict[str, float]:
    out = {"future_abstain": float(is_abstention(prediction))}
    if probe.future_answers:
        out["future_leak"] = leaked(prediction, probe.future_answers, probe.category)
    return out


# The system's own final-session answers (protocol 3): reported, choose nothing.
@declare_metric(
    "final_correct", "rq2", "right at the last version (its own final session)", order=120
)
@probe_scorer("final_qa")
def _score_final(probe: Probe, prediction: str) -> dict[str, float]:
    # Asked at the stream's last version (no rollback): did the system know the answer?
    abstained = is_abstention(prediction)
    score = 0.0 if abstained else best_locomo(prediction, probe.answers, probe.category)
    return {"final_correct": float(score >= CORRECT_THRESHOLD), "final_abstain": float(abstained)}


@declare_metric(
    "last_session_coverage",
    "rq3",
    "last-session coverage (headline)",
    order=10,
    main=True,
    title="RQ3: rollback-consistent summarisation, last-session coverage (headline: the "
    "newest restored session's new words, less those the request states, said in the first "
    "150 words; 0 when it leaks)",
    short="LastCov",
)
@declare_metric(
    "session_coverage",
    "rq3",
    "session coverage, every restored session",
    order=15,
    title="RQ3: session coverage over every restored session (the early sessions every "
    "query restores dominate it: read with the fixed-text audit)",
)
@declare_metric(
    "rouge1",
    "rq3",
    "ROUGE-1",
    order=20,
    title="RQ3: ROUGE-1 of the first 150 words (rewards any text sharing the "
    "reference's words: read with the floors)",
    short="R-1",
)
@declare_metric(
    "content_rouge1",
    "rq3",
    "content ROUGE-1",
    order=30,
    title="RQ3: content ROUGE-1 (no stopwords, names, dates, numbers)",
    short="cR-1",
)
@declare_metric(
    "specific_rouge1",
    "rq3",
    "specific content ROUGE-1",
    order=40,
    title="RQ3: specific content ROUGE-1 (also no words common to most conversations' summaries)",
    short="sR-1",
)
@declare_metric(
    "summary_leakage",
    "rq3",
    "calibrated leakage (lower is better)",
    order=50,
    higher_is_better=False,
    title="RQ3: calibrated summary leakage (lower is better)",
    short="SumLeak",
)
@probe_scorer("summary")
def _score_summary(probe: Probe, prediction: str) -> dict[str, float]:
    if probe.reference is None:
        raise ValueError(
            f"probe {probe.probe_id}: summary probe has no 'reference'; the dataset "
            "builder must set the reference summary of the target scope"
        )
    names = tuple(probe.meta.get("speakers") or ())
    budget = probe.meta.get("word_budget")
    if budget:
        # Every RQ3 score reads the first `budget` words: length cannot buy overlap.
        prediction = first_words(prediction, int(budget))
    out = {
        "rouge1": rouge1(prediction, probe.reference),
        "content_rouge1": content_rouge1(prediction, probe.reference, names),
    }
    generic = probe.meta.get("generic_stems")
    if generic is not None:
        out["specific_rouge1"] = specific_rouge1(prediction, probe.reference, generic, names)
    novel = probe.meta.get("novel_words")
    leak = summary_leakage(prediction, novel, names) if novel is not None else None
    if leak is not None:
        out["summary_leakage"] = leak
    # The coverage scores' gate: a summary that tells what came after v* scores 0.
    gated = leak is not None and leak > LEAK_GATE
    for field, words in (
        ("session_coverage", probe.meta.get("session_words")),
        ("last_session_coverage", _last_words(probe)),
    ):
        coverage = session_coverage(prediction, words, names) if words is not None else None
        if coverage is not None:
            out[field] = 0.0 if gated else coverage
    return out


def _last_words(probe: Probe) -> list[list[str]] | None:
    """The headline's one session (``meta["last_session_words"]``), as
    :func:`session_coverage` takes sessions; None for a probe built without it."""
    words = probe.meta.get("last_session_words")
    return None if words is None else [list(words)]


def score_probe(probe: Probe, prediction: str) -> dict[str, float]:
    """Score one prediction for one probe; returns the fields relevant to its kind.

    - ``qa`` (answerable): ``qa_f1``, ``qa_em`` (LoCoMo) or ``substring_em`` (MAB),
      ``qa_abstained``; category 5: ``adversarial_acc`` and ``qa_abstained``.
    - ``future_qa``: ``future_abstain`` and, with ``future_answers``, ``future_leak``.
    - ``final_qa``: ``final_correct`` and ``final_abstain``.
    - ``summary``: ``rouge1``, ``content_rouge1``, ``specific_rouge1`` (with
      ``meta["generic_stems"]``), ``summary_leakage`` (with ``meta["novel_words"]``
      holding an eligible event), the RQ3 headline ``last_session_coverage`` (with
      ``meta["last_session_words"]``) and ``session_coverage`` (with
      ``meta["session_words"]``), both 0 when the leakage is above
      :data:`~chronobench.metrics.summary.LEAK_GATE`, all on the prediction's first
      ``meta["word_budget"]`` words when the probe states a budget.
    - recall probes (``meta["format"] == "recall"``): ``recall_acc`` (answerable),
      ``recall_forget`` and ``recall_leak`` (future), ``final_correct`` (final).

    The scorer is looked up by the probe's kind in
    :data:`~chronobench.metrics.catalog.PROBE_KINDS`; an installed metric plug-in adds
    its fields for the kinds it names. Query-level fields (``rc_qa`` and its parts, ``consistent_forgetting``) need every
    probe of a run: see :mod:`chronobench.metrics.runlevel`.
    """
    if not isinstance(prediction, str):
        raise TypeError(
            f"probe {probe.probe_id}: prediction must be a str, got {type(prediction).__name__}"
        )
    recall = f"recall/{probe.kind}"
    kind = recall if probe.meta.get("format") == "recall" and recall in PROBE_KINDS else probe.kind
    if kind not in PROBE_KINDS:
        raise ValueError(f"probe {probe.probe_id}: unknown kind {probe.kind!r}")
    out: dict[str, float] = PROBE_KINDS.target(kind)(probe, prediction)
    for scorer in plugin_scorers(kind):
        out.update(scorer(probe, prediction))
    return out


def aggregate(
    per_sample_rows: Iterable[Mapping[str, object]],
    seed: int = 0,
    n_resamples: int = 1000,
    *,
    clusters: Sequence[object] | None = None,
    weights: Sequence[float] | None = None,
) -> dict[str, dict[str, float | int | None]]:
    """Summarise every numeric field across rows: ``{field: {n, n_distinct, n_clusters,
    mean, ci_low, ci_high}}`` (see :func:`~chronobench.metrics.summarise`).

    Each row is a per-sample score dict (from :func:`score_probe` or
    :func:`~chronobench.metrics.score_selection`); a field missing from a row, or set to
    ``None``, is not counted for that row. Non-numeric values are ignored. ``clusters``
    and ``weights``, when given, run parallel to the rows (cluster bootstrap, repeated
    samples weighted to count once). Fields come out sorted by name so output files
    are stable.
    """
    rows = list(per_sample_rows)
    for name, seq in (("clusters", clusters), ("weights", weights)):
        if seq is not None and len(seq) != len(rows):
            raise ValueError(f"aggregate: {len(seq)} {name} for {len(rows)} rows")
    columns: dict[str, tuple[list[float], list[object], list[float]]] = {}
    for i, row in enumerate(rows):
        for key, value in row.items():
            if value is None or isinstance(value, str) or not isinstance(value, Real):
                continue
            vals, cl, ws = columns.setdefault(key, ([], [], []))
            vals.append(float(value))
            cl.append(clusters[i] if clusters is not None else i)
            ws.append(float(weights[i]) if weights is not None else 1.0)
    return {
        key: summarise(
            columns[key][0],
            seed=seed,
            n_resamples=n_resamples,
            clusters=columns[key][1],
            weights=columns[key][2],
        )
        for key in sorted(columns)
    }

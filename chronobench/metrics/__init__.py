"""Metrics of chronobench, implementing ``docs/metrics.md`` (the project's own account of
what is implemented and why).

Per-sample score fields (stable names; the leaderboard reads them):

QA probes, ``kind="qa"`` (answerable at v*):
    ``qa_f1``        LoCoMo score with the category rules (max over gold answers), for
                     probes with a gold answer (categories 1-4, MAB: max token F1). "A".
    ``qa_em``        LoCoMo exact match (normalised token sets); LoCoMo probes only.
    ``substring_em`` MAB substring exact match against any gold; MAB probes only.
    ``qa_abstained`` 1 if the prediction abstains (false abstentions on answerable).
    ``adversarial_acc`` category 5, asked as LoCoMo's two-way choice: 1 when the
                     prediction picks "Not mentioned in the conversation".
QA probes, ``kind="future_qa"`` (evidence after v*):
    ``future_abstain`` 1 if the prediction abstains (higher is better). "B".
    ``future_leak``    1 if it does not abstain and its LoCoMo score (category rules)
                       vs the post-v* gold is >= 0.5 (lower is better).
QA probes, ``kind="final_qa"`` (asked at the stream's last version, no rollback):
    ``final_correct``, ``final_abstain``.
Recall probes (``meta["format"] == "recall"``: "Is it true that <observation>?"):
    ``recall_acc``     answerable side: 1 when the reply says yes.
    ``recall_forget``  future side: 1 when it abstains or says no; ``recall_leak``: yes.
Run-level fields (:mod:`chronobench.metrics.runlevel`):
    ``rc_qa``        the headline: per query, over its boundary probes (session at v*,
                     first session after it) that the system answers at the last
                     version, H_q = harmonic mean of A_q (kept) and B_q (forgotten);
                     ``rc_qa_a`` / ``rc_qa_b`` are its parts, ``rc_qa_a_zero`` is 1
                     when A_q = 0, ``rc_qa_known_a`` / ``_b`` count the known probes.
    ``consistent_forgetting`` future probes the system answers correctly at the last
                     version: 1 when it abstains on them at v* (shown only through
                     ``rc_qa_b``, beside the headline: alone, forgetting everything wins).
Summary probes:
    ``rouge1``           ROUGE-1 F-measure (rouge-score, stemmer on), in [0, 1].
    ``content_rouge1``   the same without stopwords, speaker names, dates, numbers.
    ``specific_rouge1``  content ROUGE-1 also without summary words common to most
                         conversations (the builder's ``meta["generic_stems"]``).
    ``summary_leakage``  calibrated: share of eligible post-v* events (>= 2 novel
                         content stems) with at least half their novel stems said.
    ``last_session_coverage`` the RQ3 headline: share of the newest restored
                         session's new reference words (those the request does not
                         state) said; 0 above the leakage gate.
    ``session_coverage`` the same averaged over every restored session (the old
                         headline: early sessions, restored by every query, dominate).
    All on the prediction's first ``meta["word_budget"]`` words when the probe has one.
Version selection (:func:`score_selection`):
    ``recall_at_1``, ``recall_at_k``, ``scope_at_k`` (|top1 - v*| <= floor(k/2);
    "Scope@2" for k = 5), ``mrr`` (over the recorded ranking depth: MRR@depth).
    A request written to be refused (:func:`score_refusal`): 1 in each field when the
    ranking is empty (refused), 0 when it ranks anything.

:func:`aggregate` turns rows of these fields into ``{field: {n, n_distinct, n_clusters,
mean, ci_low, ci_high}}`` with a seeded 95% cluster bootstrap (1,000 resamples).
"""

from chronobench.metrics.bootstrap import summarise
from chronobench.metrics.content import content_stems, content_text, content_words
from chronobench.metrics.qa import (
    NOT_MENTIONED_OPTION,
    best_f1,
    best_locomo,
    choice_question,
    leaked,
    locomo_em,
    locomo_f1,
    picked_option,
    substring_em,
)
from chronobench.metrics.runlevel import dedupe_weights, harmonic, run_units
from chronobench.metrics.score import aggregate, score_probe
from chronobench.metrics.selection import score_refusal, score_selection
from chronobench.metrics.summary import (
    content_rouge1,
    last_session_words,
    novel_event_words,
    rouge1,
    session_coverage,
    session_new_words,
    specific_rouge1,
    summary_leakage,
)
from chronobench.metrics.text import (
    ABSTAIN_PHRASES,
    ABSTAIN_TEXT,
    ABSTAIN_WHOLE,
    exact_match,
    is_abstention,
    normalize_answer,
    token_f1,
)

__all__ = [
    "ABSTAIN_PHRASES",
    "ABSTAIN_TEXT",
    "ABSTAIN_WHOLE",
    "NOT_MENTIONED_OPTION",
    "aggregate",
    "best_f1",
    "best_locomo",
    "choice_question",
    "content_rouge1",
    "content_stems",
    "content_text",
    "content_words",
    "dedupe_weights",
    "harmonic",
    "last_session_words",
    "novel_event_words",
    "picked_option",
    "run_units",
    "exact_match",
    "is_abstention",
    "leaked",
    "locomo_em",
    "locomo_f1",
    "normalize_answer",
    "rouge1",
    "score_probe",
    "score_refusal",
    "score_selection",
    "session_coverage",
    "session_new_words",
    "specific_rouge1",
    "substring_em",
    "summarise",
    "summary_leakage",
    "token_f1",
]

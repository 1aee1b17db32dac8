"""QA scores: LoCoMo category rules, MemoryAgentBench substring match, leakage and
LoCoMo's two-way choice for category 5."""

from __future__ import annotations

import re
from collections.abc import Sequence

from chronobench.metrics.text import exact_match, is_abstention, normalize_answer, token_f1

__all__ = [
    "AFFIRMATIVE",
    "CORRECT_THRESHOLD",
    "NEGATIVE",
    "affirms",
    "says_no",
    "denies",
    "LEAK_F1_THRESHOLD",
    "NOT_MENTIONED_OPTION",
    "best_f1",
    "best_locomo",
    "choice_question",
    "picked_option",
    "best_f1",
    "leaked",
    "locomo_em",
    "locomo_f1",
    "substring_em",
]

#: A future-evidence answer counts as leaked when its LoCoMo score reaches this value.
LEAK_F1_THRESHOLD = 0.5
#: An answer counts as correct (consistent forgetting's "knew it at the end") at this score.
CORRECT_THRESHOLD = 0.5
#: LoCoMo's category-5 option that is the right pick.
NOT_MENTIONED_OPTION = "Not mentioned in the conversation"


def _multi_hop_f1(prediction: str, gold: str) -> float:
    # Category 1: every comma-separated gold part is matched by its best predicted part.
    preds = [p.strip() for p in prediction.split(",")]
    parts = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in parts) / len(parts)


def locomo_f1(prediction: str, gold: str, category: int | None) -> float:
    """Score one prediction against one gold answer with LoCoMo's category rules.

    Category 1: comma-split multi-hop F1; 2, 4 and unknown: token F1; 3: F1 against the
    gold text before the first ';'; 5: 1.0 if the prediction abstains, else 0.0.
    """
    if category == 5:
        return float(is_abstention(prediction))
    if category == 1:
        return _multi_hop_f1(prediction, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def locomo_em(prediction: str, gold: str, category: int | None) -> float:
    """Exact match (normalised token sets); category 5 uses the abstention rule."""
    if category == 5:
        return float(is_abstention(prediction))
    if category == 3:
        gold = gold.split(";")[0].strip()
    return exact_match(prediction, gold)


def best_f1(prediction: str, golds: Sequence[str]) -> float:
    """Max plain token F1 of ``prediction`` over ``golds`` (0.0 when there are none)."""
    return max((token_f1(prediction, g) for g in golds), default=0.0)


def substring_em(prediction: str, golds: Sequence[str]) -> float:
    """MemoryAgentBench: 1.0 if any normalised gold is a substring of the normalised
    prediction. Empty golds never match (an empty string is in everything)."""
    pred = normalize_answer(prediction)
    for gold in golds:
        norm = normalize_answer(gold)
        if norm and norm in pred:
            return 1.0
    return 0.0


def best_locomo(prediction: str, golds: Sequence[str], category: int | None) -> float:
    """Max LoCoMo score (category rules) of ``prediction`` over ``golds``; 0.0 if none."""
    return max((locomo_f1(prediction, g, category) for g in golds), default=0.0)


def leaked(prediction: str, future_golds: Sequence[str], category: int | None = None) -> float:
    """1.0 when the prediction does not abstain and its LoCoMo score (category rules)
    against a post-v* gold reaches :data:`LEAK_F1_THRESHOLD`."""
    if is_abstention(prediction):
        return 0.0
    return float(best_locomo(prediction, future_golds, category) >= LEAK_F1_THRESHOLD)


#: First words of a reply that says yes / no to a recall question ("Is it true that ...?").
AFFIRMATIVE = frozenset({"yes", "yeah", "yep", "true", "correct", "indeed", "right"})
NEGATIVE = frozenset({"no", "nope", "false", "incorrect", "not", "never"})


def _first_word(prediction: str) -> str:
    words = normalize_answer(prediction).split()
    return words[0] if words else ""


def affirms(prediction: str) -> bool:
    """A reply that says yes: it does not abstain and its first normalised word is in
    :data:`AFFIRMATIVE` ("Yes, she did.", "True")."""
    return not is_abstention(prediction) and _first_word(prediction) in AFFIRMATIVE


def says_no(prediction: str) -> bool:
    """An explicit no: not an abstention, first normalised word in :data:`NEGATIVE`."""
    return not is_abstention(prediction) and _first_word(prediction) in NEGATIVE


def denies(prediction: str) -> bool:
    """A reply that says no (first normalised word in :data:`NEGATIVE`) or abstains."""
    return is_abstention(prediction) or _first_word(prediction) in NEGATIVE


def choice_question(question: str, options: Sequence[str]) -> str:
    """The category-5 question as LoCoMo asks it: the question, then the options."""
    a, b = options
    return f"{question} Select the correct answer: (a) {a} (b) {b}."


_LETTER = re.compile(
    r"^\s*\(?([ab])\)(?:\s|$)|^\s*([ab])\s*$|^\s*(?:answer|option)\s*:?\s*\(?([ab])\b", re.I
)


def picked_option(prediction: str, options: Sequence[str]) -> int | None:
    """Which of the two ``options`` a prediction picks, or None when it picks neither
    (or both).

    A leading letter ("(a)", "b)", "a", "Answer: b") decides; otherwise the option whose
    LoCoMo token F1 with the prediction is >= 0.5 and strictly higher than the other's;
    an abstention (:func:`is_abstention`) that matches no option picks the "not
    mentioned" option, as LoCoMo's own scoring reads it.
    """
    m = _LETTER.search(prediction)
    if m:
        letter = next(g for g in m.groups() if g)
        return "ab".index(letter.lower())
    scores = [token_f1(prediction, o) for o in options]
    best = max(range(len(options)), key=lambda i: scores[i])
    if scores[best] >= 0.5 and scores.count(scores[best]) == 1:
        return best
    if is_abstention(prediction):
        for i, o in enumerate(options):
            if is_abstention(o):
                return i
    return None

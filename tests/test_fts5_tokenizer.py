"""The tokenizer's ASCII fast path gives exactly FTS5's tokens."""

from __future__ import annotations

import random

from chronobench.bench.synthetic import synthetic_writes
from chronomem.fts5_tokenizer import Fts5Tokenizer

WORDS = (
    "caresses ponies ties caress cats feed agreed plastered motoring sing conflated "
    "troubled sized hopping tanned falling hissing fizzed failing filing happy sky "
    "relational conditional rational valenci hesitanci digitizer conformabli "
    "radicalli differentli vileli analogousli vietnamization predication operator "
    "feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti "
    "triplicate formative formalize electriciti electrical hopeful goodness revival "
    "allowance inference airliner gyroscopic adjustable defensible irritant "
    "replacement adjustment dependent adoption homologou communism activate "
    "angulariti homologous effective bowdlerize probate rate cease controll roll "
    "generalizations oscillators a i y by is as ss sses ies eed ing ed"
).split()


def _fast_and_fts5(tok: Fts5Tokenizer, texts: list[str]) -> tuple[list, list]:
    return tok.tokens(texts), tok._fts5_tokens(texts)


def test_the_fast_path_is_in_use() -> None:
    assert Fts5Tokenizer()._ascii, "FTS5's ASCII characters did not split or join cleanly"


def test_random_ascii_gives_fts5s_tokens() -> None:
    rng = random.Random(5)
    tok = Fts5Tokenizer()
    alphabet = [chr(i) for i in range(128)] + list("aeiou sy") * 8
    texts = []
    for _ in range(400):
        parts = []
        for _ in range(rng.randint(0, 12)):
            if rng.random() < 0.5:
                word = rng.choice(WORDS)
                parts.append(word.upper() if rng.random() < 0.2 else word)
            else:
                parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))))
            parts.append(rng.choice([" ", "-", ", ", "\n", "_", "'s ", "\x00", "  "]))
        texts.append("".join(parts))
    texts += ["", " ", "123", "0042 7e10 1st 2nd", "x" * 300, "Running" * 40]
    texts.append(" ".join(str(rng.randrange(10 ** rng.randint(1, 15))) for _ in range(300)))
    fast, slow = _fast_and_fts5(tok, texts)
    assert fast == slow
    assert tok.tokens(texts) == slow  # again, now from the stem cache


def test_words_ending_in_a_digit_are_their_own_stems() -> None:
    rng = random.Random(7)
    tok = Fts5Tokenizer()
    words = [w + str(rng.randrange(1000)) for w in WORDS]
    words += [w + "s" + str(rng.randrange(10)) for w in WORDS]  # a suffix, then a digit
    words += ["item201", "mp3", "covid19", "a1", "ab2", "sses9", "ies1", "y2k2", "x" * 70 + "1"]
    fast, slow = _fast_and_fts5(tok, [" ".join(words)])
    assert fast == slow == [words]
    # nor are they cached: ids and numbers are new words in most commits, and a cache
    # growing with them made each commit copy all of it
    assert not any(w[-1].isdigit() for w in tok._stems)
    assert tok.tokens([" ".join(words)]) == [words]


def test_non_ascii_and_mixed_batches() -> None:
    tok = Fts5Tokenizer()
    texts = [
        "café naïve Ünïcode Straße ﬁnancial",
        "plain words running",
        "İstanbul ΣΊΣΥΦΟΣ résumés",
        "emoji 🙂 between words",
        "tab\tand\u00a0nbsp",
    ]
    fast, slow = _fast_and_fts5(tok, texts)
    assert fast == slow


def test_benchmark_texts_and_postings() -> None:
    tok = Fts5Tokenizer()
    texts = [o["text"] for w in synthetic_writes(300, seed=9) for o in w["ops"] if o.get("text")]
    fast, slow = _fast_and_fts5(tok, texts)
    assert fast == slow
    for (terms, length), toks in zip(tok.postings(texts), slow, strict=True):
        assert length == len(toks)
        assert [t for t, _ in sorted(((t, p) for t, ps in terms.items() for p in ps),
                                     key=lambda x: x[1])] == toks  # fmt: skip


def test_the_stem_cache_is_bounded(monkeypatch) -> None:
    import chronomem.fts5_tokenizer as mod

    monkeypatch.setattr(mod, "STEM_CACHE", 10)
    tok = Fts5Tokenizer()
    for batch in (WORDS[:40], WORDS[30:45]):
        fast, slow = _fast_and_fts5(tok, [" ".join(batch)])
        assert fast == slow
    assert set(tok._stems) == set(WORDS[30:45])  # emptied when the second batch came

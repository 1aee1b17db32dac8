"""ChronoMem's selective-undo part: revert chosen commits, keep every later write.

:class:`SelectiveUndo` holds the store's :class:`~chronomem.engine.StoreEngine`:
:meth:`~SelectiveUndo.revert_commits` takes version ids
(:mod:`chronomem.selective` has the rule), :meth:`~SelectiveUndo.plan_selective_undo`
and :meth:`~SelectiveUndo.selective_undo_by_nl_query` take a request in plain words
("forget what I said about the adoption agency") and resolve it to the commits that state
it (:mod:`chronomem.nl_selective`), not to a cut point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronomem import erasure, nl_selective, selective
from chronomem import validate as val
from chronomem.engine import StoreEngine
from chronomem.types import SelectivePlan


def _versions(value: Any) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            f"versions must be a list of version ids, got {type(value).__name__}; wrap a "
            f"single id in a list: [{value!r:.20}]"
        )
    out = [val.integer(v, f"versions[{i}]", minimum=0) for i, v in enumerate(value)]
    if not out:
        raise ValueError("versions is empty: name at least one commit to revert")
    if len(set(out)) != len(out):
        raise ValueError(f"versions lists a commit twice: {out}")
    return out


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


class SelectiveUndo:
    """Selective undo over one :class:`~chronomem.engine.StoreEngine` (the checked-out
    branch of each scope)."""

    def __init__(self, engine: StoreEngine) -> None:
        self._e = engine

    def revert_commits(
        self,
        app: str,
        user: str,
        versions: Sequence[int],
        *,
        with_dependents: str = "refuse",
        redact: bool = False,
        reason: str = "selective revert",
        expected_head: int | None = None,
        preview: bool = False,
    ) -> SelectivePlan:
        """Undo exactly the item changes of the commits ``versions`` in one new version
        (revert-forward: history stays, auditable), keeping later commits' changes.

        An add is removed, an update gets the text before it back, a delete is restored.
        A later commit that changed the same item is a conflict: ``with_dependents``
        ``"refuse"`` (default) raises :class:`DependentChangesError` listing them,
        ``"keep"`` keeps the later text, ``"drop"`` reverts those commits too. A
        ``consolidate`` that merged a reverted item (``meta["replaces"]``) is always
        reverted with it (its record copies the text). ``redact=True`` erases the
        reverted texts from every table, index and cache as :meth:`redact` does by text.
        ``preview=True`` returns the plan and writes nothing; ``expected_head``: raise
        :class:`HeadMovedError` if HEAD moved since. Returns the :class:`SelectivePlan`
        (applied: ``new_head`` is the revert version).
        """
        vids = _versions(versions)
        val.choice(with_dependents, "with_dependents", selective.DEPENDENT_MODES)
        _flag(redact, "redact")
        _flag(preview, "preview")
        val.no_nul(val.text(reason, "reason", empty=True), "reason")
        if expected_head is not None:
            val.integer(expected_head, "expected_head", minimum=0)
        if preview:
            with self._e.reading(app, user, require=True) as sc:
                return selective.plan(self._e.db, sc, vids, with_dependents)
        return self._apply_selective(
            app, user, vids, with_dependents, redact, reason, expected_head
        )

    def _apply_selective(
        self,
        app: str,
        user: str,
        vids: list[int],
        with_dependents: str,
        redact: bool,
        reason: str,
        expected_head: int | None,
    ) -> SelectivePlan:
        try:
            done, stale = selective.apply(
                self._e.db, *self._e.route(app, user), vids, with_dependents, reason=reason,
                embed=self._e.encoder.embed, expected_head=expected_head, redact=redact,
                encoder=self._e.encoder,
            )  # fmt: skip
        finally:
            if redact:
                self._e.caches.drop_text()
        if stale:
            erasure.forget(stale, self._e.encoder, self._e.reranker)
        return done

    def plan_selective_undo(
        self,
        app: str,
        user: str,
        request: str,
        *,
        with_dependents: str = "refuse",
        k: int = 5,
    ) -> SelectivePlan:
        """What :meth:`selective_undo_by_nl_query` would do for ``request``; writes
        nothing. The request is resolved to the commits that state what it names
        (:mod:`chronomem.nl_selective`); a request naming no content, or matching
        nothing with evidence, raises :class:`UncertainRequestError`."""
        val.text(request, "request", empty=True)
        val.integer(k, "k", minimum=1)
        val.choice(with_dependents, "with_dependents", selective.DEPENDENT_MODES)
        with self._e.reading(app, user, require=True) as sc:
            assert sc is not None
            matched, evidence = nl_selective.match(self._e.db, sc, request, k, self._e.retrieval())
            p = selective.plan(self._e.db, sc, [v for v, _ in matched], with_dependents)
        from dataclasses import replace

        return replace(p, query=request, confidence=evidence.pop("confidence"), evidence=evidence)

    def selective_undo_by_nl_query(
        self,
        app: str,
        user: str,
        request: str,
        *,
        with_dependents: str = "refuse",
        k: int = 5,
        redact: bool = False,
        preview: bool = False,
    ) -> SelectivePlan:
        """Resolve ``request`` to commits and revert exactly those (see
        :meth:`revert_commits`); ``preview=True`` returns the plan only. Refuses
        (:class:`UncertainRequestError`, nothing changed) when not confident."""
        _flag(preview, "preview")
        _flag(redact, "redact")
        p = self.plan_selective_undo(app, user, request, with_dependents=with_dependents, k=k)
        if preview:
            return p
        reason = "nl: " + request[:200].replace("\x00", "\ufffd")
        done = self._apply_selective(app, user, p.versions, with_dependents, redact, reason, p.head)
        from dataclasses import replace

        return replace(done, query=p.query, confidence=p.confidence, evidence=p.evidence)

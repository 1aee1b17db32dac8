"""The audit of each track: name -> ``f(options: AuditOptions) -> list[HeadlineAudit]``.

Targets are ``"module:attr"`` strings, imported only when that track is audited.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from chronobench.registry import Registry

__all__ = ["AUDITS", "AuditOptions"]


class AuditOptions(BaseModel):
    """What every audit function is given.

    ``fast``: the test-suite version (a few streams, small sweeps): it checks that the
    properties hold by construction, not the published figures. ``results``: the folder
    holding ``published/`` (the headline intervals the full audit compares against).
    ``data`` and ``cache``: where built streams and the call caches live.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fast: bool = False
    results: Path = Path("results")
    data: Path | None = None
    cache: Path | None = None


AUDITS = Registry(
    "audit",
    {
        "rq1": "chronobench.tracks.selection.audit:audit",
        "rq2": "chronobench.tracks.rcqa.audit:audit",
        "rq3": "chronobench.tracks.summary.audit:audit",
        "rq4": "chronobench.tracks.selective.audit:audit",
        "repair": "chronobench.tracks.repair.audit:audit",
        # The repair headlines on the retrieval sets (builder repair-6), in their own file.
        "repair_retrieval": "chronobench.tracks.repair.audit:retrieval_audit",
    },
    hint="register one with AUDITS.register(name, 'module:attr') or declare it in the "
    "'chronobench.audits' entry-point group",
    entry_points="chronobench.audits",
)

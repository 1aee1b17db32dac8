"""Validity audits: each headline's oracle, error curves and attack families, checked.

``python -m chronobench audit [--track NAME] [--fast]`` runs the registered audits
(:data:`AUDITS`), writes ``results/audit/<track>.json`` and ``results/AUDIT.md`` and
exits non-zero when a headline breaks its contract (:mod:`chronobench.audit.contract`).
A plug-in track adds its own audit through the ``chronobench.audits`` entry-point group.
"""

from __future__ import annotations

from chronobench.audit.contract import (
    ATTACK_FAMILIES,
    AUDIT_VERSION,
    Attack,
    Curve,
    HeadlineAudit,
    Interval,
)
from chronobench.audit.registry import AUDITS, AuditOptions

__all__ = [
    "ATTACK_FAMILIES",
    "AUDITS",
    "AUDIT_VERSION",
    "Attack",
    "AuditOptions",
    "Curve",
    "HeadlineAudit",
    "Interval",
]

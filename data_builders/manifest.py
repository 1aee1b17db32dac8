"""Manifests: provenance of a built folder and the rule for reusing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronobench.data.io import MANIFEST_FILE, QUERIES_FILE, STREAMS_FILE, read_json
from chronobench.data.schema import SCHEMA_VERSION

# 1.2.0: probes (category-5 choice, final_qa, future category rules, RQ3 novel words
# and floor texts) and the episode-uniqueness anchor filter: older builds are not reused.
# 1.2.1: summary probes carry meta.generic_stems (specific content ROUGE-1).
# 1.3.0: template anchors are filtered by LoCoMo's annotations, not by BM25.
# 1.4.0: boundary probes (meta.boundary), recall probes from observations,
# final_qa for boundary answerable questions, summary probes with a word budget and
# session_words (RQ3 session coverage).
# 1.6.0: summary probes carry meta.last_session_words (RQ3 last-session coverage: the
# newest restored session's new words less those the rollback request states).
# 1.7.0: far probes (meta.reach = "far"): earlier sessions kept, later sessions forgotten;
# false statements swap in a word the subject uses elsewhere, never in the session.
BUILDER_VERSION = "1.7.0"


def make_manifest(
    *,
    dataset: str,
    granularity: str,
    source_name: str,
    source_sha256: str,
    parameters: dict[str, Any],
    counts: dict[str, Any],
    dropped: dict[str, int],
    skipped: dict[str, int],
    caveats: list[str],
    field_provenance: dict[str, list[str]],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble a manifest. No timestamps or absolute paths: rebuilds stay byte-identical.
    ``field_provenance``: which source fields feed what (the dataset's own record)."""
    return {
        "dataset": dataset,
        "granularity": granularity,
        "builder_version": BUILDER_VERSION,
        "schema_version": SCHEMA_VERSION,
        "source": {"name": source_name, "sha256": source_sha256},
        "parameters": parameters,
        "counts": counts,
        "dropped_anchors": dict(sorted(dropped.items())),
        "skipped": dict(sorted(skipped.items())),
        "caveats": caveats,
        "field_provenance": field_provenance,
        "extra": extra or {},
    }


def reusable(folder: Path, source_sha256: str, parameters: dict[str, Any]) -> bool:
    """True when ``folder`` holds a complete build of this source with these parameters."""
    if not all((folder / f).is_file() for f in (MANIFEST_FILE, STREAMS_FILE, QUERIES_FILE)):
        return False
    try:
        m = read_json(folder / MANIFEST_FILE)
    except ValueError:
        return False
    # Compare through JSON so tuples/lists and int/float spellings do not matter.
    same_params = json.loads(json.dumps(m.get("parameters"))) == json.loads(json.dumps(parameters))
    return (
        m.get("builder_version") == BUILDER_VERSION
        and m.get("source", {}).get("sha256") == source_sha256
        and same_params
    )

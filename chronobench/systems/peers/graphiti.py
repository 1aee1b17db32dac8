"""Graphiti (``graphiti-core`` with the embedded Kuzu driver), offline, episodes and all.

Native: each item text is one ``add_episode`` (name = item id, source description =
``chronobench v<version>``, reference time = the write's timestamp), so graphiti runs
its whole ingestion pipeline: previous-episode retrieval, entity extraction, node
deduplication, edge extraction, edge deduplication and timestamping, summaries, all
written to a Kuzu database in the work folder. Search is ``Graphiti.search`` (hybrid
BM25 + cosine over edge facts, RRF); rollback is ``remove_episode`` for every episode
of a later write, newest first: graphiti's own undo.

Scripted, because nothing may call an LLM: the LLM slot holds :class:`ScriptedLLM`,
which answers graphiti's structured prompts by fixed rules from the item being added
(one entity per item, named by its item id, or one ``shared_entity`` for all; one fact
per item, the item's text, as a self-edge of that entity; no duplicates, no
contradictions, no timestamps, no summary written); any other prompt raises. So the graph's content is the stream's text, and what
is measured is graphiti's storage, search and undo, not an extractor's quality. The
embedder is the shared local embedding behind graphiti's ``EmbedderClient``; the
cross-encoder slot is a pass-through (the default search recipe never reranks with it).

Two things the adapter does for graphiti (docs/peers.md): the Kuzu driver's
``build_indices_and_constraints`` is a no-op, so the full-text indexes its search
queries are created here once; and graphiti's PostHog telemetry is switched off
(``GRAPHITI_TELEMETRY_ENABLED=false``) before import, since it is on by default.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import (
    Bookkeeping,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

GRAPH_FILE = "graph.kuzu"
SOURCE_PREFIX = "chronobench v"
_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_ALL = 1_000_000
_KUZU_FLAKE = "unordered_map::at"  # Kuzu's transient full-text query failure


def _import_graphiti() -> dict[str, Any]:
    # Read at import by graphiti's telemetry module: on by default, it would post to PostHog.
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    from graphiti_core import Graphiti
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.driver.driver import GraphProvider
    from graphiti_core.driver.kuzu_driver import KuzuDriver
    from graphiti_core.embedder.client import EmbedderClient
    from graphiti_core.graph_queries import get_fulltext_indices
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.llm_client.config import LLMConfig
    from graphiti_core.nodes import EpisodeType, EpisodicNode

    return {
        "Graphiti": Graphiti,
        "CrossEncoderClient": CrossEncoderClient,
        "GraphProvider": GraphProvider,
        "KuzuDriver": KuzuDriver,
        "EmbedderClient": EmbedderClient,
        "get_fulltext_indices": get_fulltext_indices,
        "LLMClient": LLMClient,
        "LLMConfig": LLMConfig,
        "EpisodeType": EpisodeType,
        "EpisodicNode": EpisodicNode,
    }


def _reference_time(stamp: str | None, version: int) -> datetime:
    """The write's timestamp as graphiti's ``reference_time`` (timezone-aware); a
    timestamp that does not parse becomes a fixed epoch plus ``version`` minutes."""
    if stamp:
        parsed: datetime | None = None
        try:
            parsed = datetime.fromisoformat(stamp)
        except ValueError:
            try:
                from dateutil import parser as date_parser

                parsed = date_parser.parse(stamp)
            except (ImportError, ValueError, OverflowError):
                parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return _EPOCH + timedelta(minutes=version)


def _clients(g: dict[str, Any], embedding: Any, shared_entity: str | None) -> tuple[Any, Any, Any]:
    """The scripted LLM, the local embedder and the pass-through cross-encoder."""

    class ScriptedLLM(g["LLMClient"]):  # type: ignore[misc, valid-type]
        """Answers graphiti's structured prompts by rule from ``current`` (item id, text)."""

        current: tuple[str, str] | None = None

        def _entity(self) -> str:
            if self.current is None:
                raise RuntimeError("graphiti peer: LLM called outside add()")
            return shared_entity or f"memory {self.current[0]}"

        async def _generate_response(
            self, messages: Any, response_model: Any = None, *args: Any, **kwargs: Any
        ) -> dict[str, Any]:
            name = getattr(response_model, "__name__", None)
            if name == "ExtractedEntities":
                return {"extracted_entities": [{"name": self._entity(), "entity_type_id": 0}]}
            if name == "ExtractedEdges":
                assert self.current is not None
                entity = self._entity()
                fact = {
                    "source_entity_name": entity,
                    "target_entity_name": entity,
                    "relation_type": "STATES",
                    "fact": self.current[1],
                }
                return {"edges": [fact]}
            if name == "NodeResolutions":  # the one extracted entity is new
                return {
                    "entity_resolutions": [
                        {"id": 0, "name": self._entity(), "duplicate_candidate_id": -1}
                    ]
                }
            if name == "EdgeDuplicate":
                return {"duplicate_facts": [], "contradicted_facts": []}
            if name == "EdgeTimestamps":
                return {"valid_at": None, "invalid_at": None}
            if name == "SummarizedEntities":
                # Also asked by remove_episode, to rebuild a surviving entity's summary
                # from its remaining episodes: no rule writes one, so it ends up empty.
                return {"summaries": []}
            raise RuntimeError(f"graphiti peer: unscripted LLM prompt (response model {name})")

    class LocalEmbedder(g["EmbedderClient"]):  # type: ignore[misc, valid-type]
        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else str(input_data)
            return embedding.embed_fn([text])[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return embedding.embed_fn(list(input_data_list))

    class PassThrough(g["CrossEncoderClient"]):  # type: ignore[misc, valid-type]
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            return [(p, 1.0 / (i + 1)) for i, p in enumerate(passages)]

    return ScriptedLLM(g["LLMConfig"]()), LocalEmbedder(), PassThrough()


class GraphitiPeer:
    """One episode per item; rollback is graphiti's ``remove_episode`` (native)."""

    name = "graphiti"
    native_rollback = True
    native_search = True

    def __init__(
        self, workdir: str | Path, embedding: Any, *, shared_entity: str | None = None
    ) -> None:
        """``shared_entity``: every item's fact is about this one entity (else one entity
        per item), so entities outlive the episodes that are removed."""
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._g = _import_graphiti()
        self.notes = Bookkeeping(self.workdir)
        recorded = self.notes.data.setdefault("shared_entity", shared_entity)
        if recorded != shared_entity:
            raise ValueError(
                f"graphiti peer: {self.workdir} was built with shared_entity={recorded!r}, "
                f"reopened with {shared_entity!r}; pass the same option"
            )
        self._loop = asyncio.new_event_loop()
        with warnings.catch_warnings():
            # "The Kuzu backend is deprecated" (upstream Kuzu is unmaintained); recorded
            # in docs/peers.md rather than repeated on every open.
            warnings.simplefilter("ignore", DeprecationWarning)
            self.driver = self._g["KuzuDriver"](db=str(self.workdir / GRAPH_FILE))
        self.llm, embedder, reranker = _clients(self._g, embedding, shared_entity)
        self.search_retries = 0  # see _search
        self.graphiti = self._g["Graphiti"](
            graph_driver=self.driver, llm_client=self.llm, embedder=embedder, cross_encoder=reranker
        )
        if not self.notes.data.get("fulltext_indices"):
            # KuzuDriver.build_indices_and_constraints is a no-op; search needs these.
            for query in self._g["get_fulltext_indices"](self._g["GraphProvider"].KUZU):
                self._run(self.driver.execute_query(query))
            self.notes.data["fulltext_indices"] = True
        # episode uuid -> version, in add order (graphiti's record is the source description).
        self.notes.data.setdefault("episodes", {})
        self.notes.save()

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    # -- writes --------------------------------------------------------------------
    def add(self, write: PeerWrite) -> None:
        when = _reference_time(write.timestamp, write.version)
        for item_id, text in write.items:
            self.llm.current = (item_id, text)
            try:
                result = self._run(
                    self.graphiti.add_episode(
                        name=item_id,
                        episode_body=text,
                        source_description=f"{SOURCE_PREFIX}{write.version}",
                        reference_time=when,
                        source=self._g["EpisodeType"].text,
                    )
                )
            finally:
                self.llm.current = None
            self.notes.data["episodes"][result.episode.uuid] = write.version
        self.notes.save()

    # -- reads ---------------------------------------------------------------------
    def _episodes(self) -> list[Any]:
        return self._run(self._g["EpisodicNode"].get_by_group_ids(self.driver, [""], limit=_ALL))

    @staticmethod
    def _version(episode: Any) -> int | None:
        desc = episode.source_description or ""
        if desc.startswith(SOURCE_PREFIX) and desc[len(SOURCE_PREFIX) :].isdigit():
            return int(desc[len(SOURCE_PREFIX) :])
        return None

    def state(self) -> list[Memory]:
        mems = [Memory(e.name, e.content, self._version(e)) for e in self._episodes()]
        return sorted(mems, key=lambda m: (m.version or 0, m.item_id or ""))

    def search(self, query: str, k: int) -> list[Memory]:
        if k <= 0:
            return []
        edges = self._search(query, k)
        by_uuid = {e.uuid: e for e in self._episodes()} if edges else {}
        out: list[Memory] = []
        for rank, edge in enumerate(edges):
            episode = next((by_uuid[u] for u in edge.episodes if u in by_uuid), None)
            item_id = episode.name if episode is not None else None
            version = self._version(episode) if episode is not None else None
            # Graphiti returns facts in rank order without scores: the score is 1/rank.
            out.append(Memory(item_id, edge.fact, version, 1.0 / (rank + 1)))
        return out[:k]

    def _search(self, query: str, k: int) -> list[Any]:
        """``Graphiti.search``, once more after Kuzu's flaky full-text failure: its
        ``QUERY_FTS_INDEX`` raises ``RuntimeError: unordered_map::at`` now and then (2 of
        5 runs of the peers preset, each on another question) and the same call then
        succeeds. Retries are counted (``search_retries``) and logged; any other error,
        or the same one twice, is raised."""
        try:
            return self._run(self.graphiti.search(query, num_results=k))
        except RuntimeError as exc:
            if _KUZU_FLAKE not in str(exc):
                raise
            self.search_retries += 1
            logging.getLogger(__name__).warning(
                "graphiti: Kuzu full-text query failed (%s); retried once (%d so far)",
                exc,
                self.search_retries,
            )
            return self._run(self.graphiti.search(query, num_results=k))

    # -- rollback (native) -------------------------------------------------------------
    def rollback_to(self, version: int) -> RollbackInfo:
        """``remove_episode`` for every episode of a write after ``version``, newest first."""
        later = [e for e in self._episodes() if (self._version(e) or 0) > version]
        later.sort(key=lambda e: (self._version(e) or 0, e.created_at), reverse=True)
        for episode in later:
            self._run(self.graphiti.remove_episode(episode.uuid))
            self.notes.data["episodes"].pop(episode.uuid, None)
        self.notes.save()
        return RollbackInfo(
            True, "Graphiti.remove_episode per later episode", {"removed_episodes": len(later)}
        )

    def storage_bytes(self) -> int:
        """Bytes on disk after a Kuzu ``CHECKPOINT``: until one, recent writes are only in
        memory and the WAL, and the database file grows at the checkpoint (by a lot:
        Kuzu allocates pages per table and index), so an unflushed figure understates."""
        self._run(self.driver.execute_query("CHECKPOINT;"))
        return folder_bytes(self.workdir)

    def close(self) -> None:
        self.notes.save()
        if self._loop.is_closed():
            return
        self._run(self.graphiti.close())
        # KuzuDriver.close leaves the database open ("rely on GC"); a reopen of the same
        # folder in this process needs the connection and database released.
        self.driver.client.close()
        self.driver.db.close()
        self._loop.close()

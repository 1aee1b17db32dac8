"""Where a PostgreSQL store lives: URLs, schemas, temporary stores, side connections."""

from __future__ import annotations

import uuid
from typing import Any

from chronobench.memory.pg.conn import (
    PgConn,
    connect_raw,
    describe_url,
    psycopg_module,
    quote_ident,
)

URL_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_SCHEMA = "chronomem"


def is_url(path: str) -> bool:
    """Whether a store location names a PostgreSQL server."""
    return path.startswith(URL_SCHEMES)


def with_schema(url: str, schema: str) -> str:
    """``url`` with libpq's ``options`` setting ``search_path`` to ``schema`` (the store
    then lives in that schema, created on first use)."""
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    options = [v for k, v in parse_qsl(parts.query) if k == "options"]
    options.append(f"-csearch_path={schema}")
    query.append(("options", " ".join(options)))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def drop_schema(url: str, schema: str) -> None:
    """Drop a store's schema and everything in it (idempotent)."""
    psycopg = psycopg_module()
    with psycopg.connect(url, autocommit=True, connect_timeout=30) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")


def temporary_store(url: str, **options: Any) -> Any:
    """A new, empty ChronoMem store in a schema of its own on the server at ``url``,
    dropped when the store closes (benchmark stores, one per stream)."""
    from chronobench.memory import ChronoMem

    mem = ChronoMem(with_schema(url, f"chronomem_tmp_{uuid.uuid4().hex[:12]}"), **options)
    mem.backend.ephemeral = True
    return mem


def ledger_connection(url: str, schema: str | None, busy_timeout_ms: int = 60_000) -> PgConn:
    """A connection of its own to a store's schema (for tables kept beside the store,
    e.g. the ADK service's ledger); qmark SQL, autocommit."""
    raw = connect_raw(url, schema or DEFAULT_SCHEMA, busy_timeout_ms, "chronomem-ledger")
    return PgConn(raw, describe_url(url))

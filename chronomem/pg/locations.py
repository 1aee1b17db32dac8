"""Where a PostgreSQL store lives: URLs, schemas, side connections (temporary stores:
:mod:`chronomem.pg.temporary`, which needs the store class)."""

from __future__ import annotations

from chronomem.pg.conn import (
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


def ledger_connection(url: str, schema: str | None, busy_timeout_ms: int = 60_000) -> PgConn:
    """A connection of its own to a store's schema (for tables kept beside the store,
    e.g. the ADK service's ledger); qmark SQL, autocommit."""
    raw = connect_raw(url, schema or DEFAULT_SCHEMA, busy_timeout_ms, "chronomem-ledger")
    return PgConn(raw, describe_url(url))

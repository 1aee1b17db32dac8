"""ChronoMem's PostgreSQL backend (optional extra ``postgres``: psycopg 3)."""

"""A spy around a memory system: records every call the runner makes and its arguments
(tests/test_sealed_protocol.py reads the log)."""

from __future__ import annotations

from typing import Any


class SpySession:
    def __init__(self, inner: Any, log: list) -> None:
        self.inner, self.log = inner, log

    def rollback(self, request: Any) -> Any:
        self.log.append(("rollback", request))
        return self.inner.rollback(request)

    def ask(self, questions: Any) -> Any:
        self.log.append(("ask", list(questions)))
        return self.inner.ask(questions)

    def close(self) -> None:
        self.log.append(("close_session",))
        self.inner.close()

    def __getattr__(self, attr: str) -> Any:
        self.log.append(("getattr_session", attr))
        return getattr(self.inner, attr)


class SpySystem:
    """Records every call and argument; forwards to the real system."""

    def __init__(self, inner: Any, log: list) -> None:
        self.inner, self.log, self.name = inner, log, inner.name

    def ingest(self, writes: Any) -> None:
        self.log.append(("ingest", writes))
        self.inner.ingest(writes)

    def open_session(self, *args: Any, **kwargs: Any) -> SpySession:
        self.log.append(("open_session", args, kwargs))
        return SpySession(self.inner.open_session(*args, **kwargs), self.log)

    def open_oracle_session(self, *args: Any, **kwargs: Any) -> SpySession:
        self.log.append(("open_oracle_session", args, kwargs))
        return SpySession(self.inner.open_oracle_session(*args, **kwargs), self.log)

    def close(self) -> None:
        self.log.append(("close",))
        self.inner.close()

    def __getattr__(self, attr: str) -> Any:
        self.log.append(("getattr", attr))
        return getattr(self.inner, attr)

"""One progress display for long runs: the cells of a run and, inside a cell, its
queries or calls, each with a count and an ETA.

The display is one status line on stderr, redrawn in place, and only when stderr is a
terminal (and the config's ``progress`` is true): a run piped to a file or a CI log
shows nothing of it, only the runner's own per-cell lines. Every runner uses it the same
way::

    from chronobench.runner import progress

    with progress.cells(len(cells), enabled=cfg_progress) as run:  # the suite loop
        for cell in cells:
            run.start(cell.describe())
            ...
            run.finish()
            print(f"... ({run.eta_text()})")  # "3 cells left, ETA 4m10s" in the plain line

    for query in progress.items(queries, label="bm25: rollback", enabled=spec.progress):
        ...                                   # inside a cell: queries, calls, cases

    with progress.task(total, "RQ1 selection", enabled=spec.progress) as bar:
        bar.skip(n_resumed)                   # done before (a resumed run): not in the rate
        bar.update(n)

Worker processes (``jobs``): :func:`worker_init` points a worker's tasks at a queue the
parent drains (:meth:`Cells.listen`), so the parent's line shows every running cell's
inner count; the ETA over cells is the parent's (cells finished per second of wall
time, which counts the workers running side by side). ``CHRONOBENCH_PROGRESS=always``
draws even when stderr is not a terminal; ``never`` turns the display off.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")

#: Seconds between two redraws of the line (a finished cell or task redraws at once).
REDRAW_S = 0.5
#: Seconds between two reports a worker's task sends to the parent.
WORKER_REPORT_S = 1.0

_lock = threading.RLock()
_display: _Display | None = None  # the one line of this process, while something shows
_sink: Any = None  # a worker's queue to the parent (worker_init)


def format_seconds(seconds: float) -> str:
    """``42s``, ``4m10s``, ``1h05m``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def should_draw(enabled: bool, stream: IO[str] | None = None) -> bool:
    """Whether a display draws: ``enabled`` (the config's ``progress``), not turned off
    by ``CHRONOBENCH_PROGRESS=never``, and ``stream`` (stderr) a terminal or
    ``CHRONOBENCH_PROGRESS=always``."""
    mode = os.environ.get("CHRONOBENCH_PROGRESS", "").strip().lower()
    if not enabled or mode in ("never", "0", "false", "off"):
        return False
    if mode in ("always", "1", "true", "on"):
        return True
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Counter:
    """A count towards a total with a rate-based ETA (skipped items are not in the rate)."""

    def __init__(self, total: int | None, label: str, *, settle: int = 0) -> None:
        self.total, self.label = total, label
        self.n = 0
        self.skipped = 0
        self.t0 = time.monotonic()
        # With ``settle``, the first ``settle`` items are left out (a run's first cell
        # also loads models and fills the embedding cache: 4m52s was once forecast for a
        # 19 s job), and the ETA is the median gap between the next finishes, given once
        # there are three of them: one more slow cell (the first to build a known set)
        # does not make the forecast.
        self.settle = settle
        self._finished: list[float] = []

    def advance(self, n: int = 1) -> None:
        """``n`` more items done."""
        self.n += n
        if self.settle:
            self._finished += [time.monotonic()] * n

    def eta(self) -> float | None:
        worked = self.n - self.skipped
        if self.total is None or worked <= 0:
            return None
        left = max(self.total - self.n, 0)
        if not self.settle:
            return (time.monotonic() - self.t0) / worked * left
        times = self._finished[self.settle - 1 :]
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        if len(gaps) < 3:
            return None
        return gaps[len(gaps) // 2] * left

    def text(self) -> str:
        out = f"{self.label} {self.n}/{self.total}" if self.total else f"{self.label} {self.n}"
        eta = self.eta()
        if self.total and self.n < self.total:
            out += f" ETA {format_seconds(eta)}" if eta is not None else " ETA ?"
        return out


class _Display:
    """The status line: the cells' counter, then the tasks running now."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.cells: _Counter | None = None
        self.current = ""  # the cell running here (sequential runs)
        self.tasks: list[_Counter] = []
        self.remote: dict[Any, str] = {}  # worker pid -> its task's text
        self.shown = False
        self.last = 0.0

    def line(self) -> str:
        # The counts first, the cell's long description last (what a narrow terminal cuts).
        parts = [self.cells.text()] if self.cells is not None else []
        parts += [t.text() for t in self.tasks]
        parts += list(self.remote.values())
        if self.current:
            parts.append(self.current)
        return " | ".join(parts)

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < REDRAW_S:
            return
        self.last = now
        width = shutil.get_terminal_size((100, 20)).columns - 1
        text = self.line()
        if len(text) > width:
            text = text[: max(width - 1, 0)] + "…"
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


class _ClearingStdout:
    """sys.stdout while the line shows: a print clears the line first and redraws it
    after a newline, so printed text never lands on the status line."""

    def __init__(self, inner: IO[str], display: _Display) -> None:
        self._inner, self._display = inner, display

    def write(self, text: str) -> int:
        with _lock:
            self._display.clear()
            n = self._inner.write(text)
            if text.endswith("\n"):
                self._inner.flush()
                self._display.draw(force=True)
            return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _open(stream: IO[str]) -> _Display:
    """The process's display (made on first use; prints go around its line)."""
    global _display
    if _display is None:
        _display = _Display(stream)
        if sys.stdout is not stream and getattr(sys.stdout, "isatty", lambda: False)():
            sys.stdout = _ClearingStdout(sys.stdout, _display)  # type: ignore[assignment]
    return _display


def _close_if_idle() -> None:
    global _display
    d = _display
    if d is None or d.cells is not None or d.tasks or d.remote:
        return
    d.clear()
    if isinstance(sys.stdout, _ClearingStdout):
        sys.stdout = sys.stdout._inner  # type: ignore[assignment]
    _display = None


class Task:
    """A count inside a cell (queries, calls, cases). Made by :func:`task`."""

    def __init__(self, total: int | None, label: str, draw: bool) -> None:
        self.counter = _Counter(total, label)
        self._draw = draw
        self._sent = 0.0

    def __enter__(self) -> Task:
        if self._draw:
            with _lock:
                d = _open(sys.stderr)
                d.tasks.append(self.counter)
                d.draw(force=True)
        return self

    def update(self, n: int = 1) -> None:
        """``n`` more items done."""
        self.counter.n += n
        self._report()

    def skip(self, n: int = 1) -> None:
        """``n`` items done before this run (resumed): counted, not in the rate."""
        self.counter.n += n
        self.counter.skipped += n
        self._report()

    def _report(self, force: bool = False) -> None:
        if self._draw:
            with _lock:
                if _display is not None:
                    _display.draw(force=force)
        elif _sink is not None:
            now = time.monotonic()
            if force or now - self._sent >= WORKER_REPORT_S:
                self._sent = now
                _send((os.getpid(), self.counter.text()))

    def __exit__(self, *exc: object) -> None:
        if self._draw:
            with _lock:
                if _display is not None and self.counter in _display.tasks:
                    _display.tasks.remove(self.counter)
                    _display.draw(force=True)
                _close_if_idle()
        elif _sink is not None:
            _send((os.getpid(), None))


def task(total: int | None, label: str, *, enabled: bool = True) -> Task:
    """A counter inside a cell, shown on the status line while its ``with`` block runs
    (in a worker: reported to the parent's line)."""
    return Task(total, label, should_draw(enabled) and _sink is None)


def items(
    iterable: Iterable[T], *, label: str, total: int | None = None, enabled: bool = True
) -> Iterator[T]:
    """``iterable``, counted on the status line (``total``: its length when it has one)."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with task(total, label, enabled=enabled) as bar:
        for item in iterable:
            yield item
            bar.update(1)


class Cells:
    """The run's cells: a count, the cell running, and the ETA over cells. Made by
    :func:`cells`."""

    def __init__(self, total: int, draw: bool) -> None:
        self.counter = _Counter(total, "cells", settle=1)
        self._draw = draw
        self._queue: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Cells:
        if self._draw:
            with _lock:
                d = _open(sys.stderr)
                d.cells = self.counter
                d.draw(force=True)
        return self

    @property
    def drawing(self) -> bool:
        """Whether this display draws (a terminal, ``progress`` on)."""
        return self._draw

    def start(self, label: str) -> None:
        """The cell ``label`` starts here (shown beside the count)."""
        with _lock:
            if self._draw and _display is not None:
                _display.current = label
                _display.draw(force=True)

    def finish(self, n: int = 1) -> None:
        """``n`` cells finished."""
        self.counter.advance(n)
        with _lock:
            if self._draw and _display is not None:
                _display.current = ""
                _display.draw(force=True)

    def eta_text(self) -> str:
        """``3 cells left, ETA 4m10s`` (``""`` when none are left): for plain lines."""
        left = (self.counter.total or 0) - self.counter.n
        if left <= 0:
            return ""
        eta = self.counter.eta()
        when = format_seconds(eta) if eta is not None else "?"
        return f"{left} cell{'s' if left != 1 else ''} left, ETA {when}"

    def listen(self, queue: Any) -> None:
        """Show what workers report on ``queue`` (:func:`worker_init`) until exit."""
        if not self._draw:
            return
        self._queue = queue

        def drain() -> None:
            while True:
                msg = queue.get()
                if msg is None:
                    return
                pid, text = msg
                with _lock:
                    if _display is None:
                        continue
                    if text is None:
                        _display.remote.pop(pid, None)
                    else:
                        _display.remote[pid] = text
                    _display.draw()

        self._thread = threading.Thread(target=drain, name="progress-listener", daemon=True)
        self._thread.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=5)
        if self._draw:
            with _lock:
                if _display is not None:
                    _display.cells = None
                    _display.current = ""
                    _display.remote.clear()
                _close_if_idle()


def cells(total: int, *, enabled: bool = True) -> Cells:
    """The run's cell counter (see the module)."""
    return Cells(total, should_draw(enabled))


def worker_init(queue: Any) -> None:
    """In a worker process: send this process's task counts to the parent's ``queue``."""
    global _sink
    _sink = queue


def _send(msg: Any) -> None:
    # A lost progress report must never fail a cell.
    with contextlib.suppress(Exception):
        _sink.put_nowait(msg)


def took(t0: float, run: Cells) -> str:
    """``12.3 s`` since ``t0`` (a ``perf_counter`` reading), with the cells left and their
    ETA: the runner's plain per-cell line, the one progress a log gets."""
    out = f"{time.perf_counter() - t0:.1f} s"
    left = run.eta_text()
    return f"{out}; {left}" if left else out

"""The progress display (chronobench/runner/progress.py): quiet when stderr is not a
terminal, counts and an ETA on one redrawn line when it is, and worker processes'
counts on the parent's line."""

from __future__ import annotations

import io
import os
import queue
import select
import subprocess
import sys
import textwrap
import time

import pytest

from chronobench.runner import progress
from tests.conftest import REPO_ROOT


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHRONOBENCH_PROGRESS", raising=False)


def test_format_seconds() -> None:
    assert progress.format_seconds(42) == "42s"
    assert progress.format_seconds(250) == "4m10s"
    assert progress.format_seconds(3900) == "1h05m"


def test_quiet_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    err, out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", out)
    assert not progress.should_draw(True)
    with progress.cells(3) as run:
        for i in range(3):
            run.start(f"cell {i}")
            for _ in progress.items(range(5), label="rollback"):
                print("a line")
            run.finish()
    assert err.getvalue() == ""
    assert out.getvalue() == "a line\n" * 15  # prints pass through untouched
    assert sys.stdout is out


def test_off_by_config_or_env(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    assert progress.should_draw(True, tty)
    assert not progress.should_draw(False, tty)  # progress=false
    monkeypatch.setenv("CHRONOBENCH_PROGRESS", "never")
    assert not progress.should_draw(True, tty)
    monkeypatch.setenv("CHRONOBENCH_PROGRESS", "always")
    assert progress.should_draw(True, io.StringIO())
    assert not progress.should_draw(False, io.StringIO())  # the config still wins


def test_forced_line_has_counts_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOBENCH_PROGRESS", "always")
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with progress.cells(2) as run:
        run.start("tiny cell")
        with progress.task(10, "bm25: rollback") as bar:
            bar.skip(4)  # resumed: counted, not in the rate
            time.sleep(0.02)
            bar.update(2)
        run.finish()
        assert run.eta_text().startswith("1 cell left, ETA ")
    text = err.getvalue()
    assert "cells 0/2 ETA ?" in text
    assert "bm25: rollback 6/10 ETA " in text
    assert "tiny cell" in text
    assert "cells 1/2 ETA " in text
    assert text.endswith("\r\x1b[K")  # the line is cleared at the end
    assert progress._display is None


def test_eta_counts_only_work_done_here(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    c = progress._Counter(100, "q")
    c.n = c.skipped = 50  # a resumed run
    assert c.eta() is None
    clock[0] += 10
    c.n += 10  # 10 items in 10 s, 40 left
    assert c.eta() == pytest.approx(40.0)
    assert c.text() == "q 60/100 ETA 40s"


def test_worker_reports_reach_the_parent_line(monkeypatch: pytest.MonkeyPatch) -> None:
    sink: queue.Queue = queue.Queue()
    monkeypatch.setattr(progress, "_sink", sink)
    with progress.task(3, "mem0: answer", enabled=False) as bar:  # workers run quiet
        bar.update(3)
    sent = []
    while not sink.empty():
        sent.append(sink.get())
    assert sent[0] == (os.getpid(), "mem0: answer 3/3")
    assert sent[-1] == (os.getpid(), None)  # the task ended: off the parent's line

    monkeypatch.setattr(progress, "_sink", None)
    monkeypatch.setenv("CHRONOBENCH_PROGRESS", "always")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    inbox: queue.Queue = queue.Queue()
    with progress.cells(4) as run:
        run.listen(inbox)
        inbox.put((123, "mem0: answer 2/9 ETA 5s"))
        deadline = time.monotonic() + 5
        while "mem0" not in progress._display.line() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert progress._display.line() == "cells 0/4 ETA ? | mem0: answer 2/9 ETA 5s"
        inbox.put((123, None))
        while progress._display.remote and time.monotonic() < deadline:
            time.sleep(0.01)
        assert progress._display.line() == "cells 0/4 ETA ?"


_SCRIPT = textwrap.dedent(
    """
    import time
    from chronobench.runner import progress
    progress.REDRAW_S = 0.0
    with progress.cells(2) as run:
        for c in range(2):
            run.start(f"cell-{c}")
            for q in progress.items(range(3), label="rollback"):
                time.sleep(0.01)
            run.finish()
            print(f"wrote cell-{c} ({progress.took(time.perf_counter(), run)})", flush=True)
    """
)


def _run_in_pty(env: dict[str, str]) -> str:
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=REPO_ROOT,
        env=env,
        close_fds=True,
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(leader)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_pseudo_terminal_shows_counts_and_eta() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("CHRONOBENCH_PROGRESS", None)
    text = _run_in_pty(env)
    assert "\x1b[K" in text  # drawn in place
    assert "cells 0/2 ETA ?" in text
    assert "rollback 1/3 ETA " in text
    assert "cell-0" in text
    assert "wrote cell-0 (" in text and "1 cell left, ETA " in text
    # A print never shares a line with the status line: each starts on a cleared line.
    assert "\r\x1b[Kwrote cell-1" in text

    quiet = _run_in_pty({**env, "CHRONOBENCH_PROGRESS": "never"})
    assert "\x1b[K" not in quiet and "rollback" not in quiet
    assert "wrote cell-1" in quiet

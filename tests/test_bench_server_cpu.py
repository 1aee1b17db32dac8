"""The server-CPU arithmetic of ``bench store`` on fake ``/proc`` readings."""

from __future__ import annotations

from pathlib import Path

from chronobench.bench.concurrency import backend_cpu_ticks, bound_line, proc_stat, snapshot

POSTMASTER = 100


def fake_stat(proc: Path, pid: int, ppid: int, utime: int, stime: int, start: int) -> None:
    """A ``/proc/PID/stat`` line with the fields the probe reads; the command name
    holds a space and a parenthesis, as a process may name itself."""
    after_comm = ["S", str(ppid)] + ["0"] * 9 + [str(utime), str(stime)] + ["0"] * 6
    after_comm += [str(start)] + ["0"] * 30
    assert after_comm[11] == str(utime) and after_comm[19] == str(start)
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    (proc / str(pid) / "stat").write_text(f"{pid} (postgres: a (b) c) " + " ".join(after_comm))


def test_proc_stat_reads_past_a_command_name_with_spaces(tmp_path: Path) -> None:
    fake_stat(tmp_path, 7, POSTMASTER, utime=30, stime=12, start=555)
    assert proc_stat(7, tmp_path) == (POSTMASTER, 555, 42)


def test_cpu_is_the_sum_of_each_backends_own_delta(tmp_path: Path) -> None:
    fake_stat(tmp_path, 7, POSTMASTER, 10, 5, start=900)
    fake_stat(tmp_path, 8, POSTMASTER, 20, 0, start=901)
    before = snapshot([7, 8], POSTMASTER, tmp_path)
    fake_stat(tmp_path, 7, POSTMASTER, 40, 9, start=900)  # +34
    fake_stat(tmp_path, 8, POSTMASTER, 21, 4, start=901)  # +5
    after = snapshot([7, 8], POSTMASTER, tmp_path)
    assert before == {7: (900, 15), 8: (901, 20)}
    assert backend_cpu_ticks(before, after) == 39
    # other processes of the server, starting or exiting, change nothing
    fake_stat(tmp_path, 9, POSTMASTER, 500, 500, start=950)
    assert backend_cpu_ticks(before, snapshot([7, 8], POSTMASTER, tmp_path)) == 39


def test_untrusted_readings_give_a_reason_not_a_number(tmp_path: Path) -> None:
    fake_stat(tmp_path, 7, POSTMASTER, 10, 5, start=900)
    before = snapshot([7], POSTMASTER, tmp_path)
    # the backend exited and its pid went to a new process
    fake_stat(tmp_path, 7, POSTMASTER, 1, 0, start=990)
    reused = backend_cpu_ticks(before, snapshot([7], POSTMASTER, tmp_path))
    assert isinstance(reused, str) and "reused pid" in reused
    # the same process, but its counter lower than before
    fake_stat(tmp_path, 7, POSTMASTER, 1, 0, start=900)
    backwards = backend_cpu_ticks(before, snapshot([7], POSTMASTER, tmp_path))
    assert isinstance(backwards, str) and "went backwards" in backwards
    # gone before the second reading
    (tmp_path / "7" / "stat").unlink()
    gone = backend_cpu_ticks(before, snapshot([7], POSTMASTER, tmp_path))
    assert isinstance(gone, str) and "unreadable" in gone
    # a pid that is not this server's child (a remote server's pid means another process)
    fake_stat(tmp_path, 8, 1, 10, 5, start=900)
    stranger = snapshot([8], POSTMASTER, tmp_path)
    assert isinstance(stranger, str) and "not a backend of the server" in stranger
    assert backend_cpu_ticks(stranger, before) == stranger
    assert backend_cpu_ticks({}, {}) == "no backend pids"
    assert "differ" in str(backend_cpu_ticks(before, {}))


def test_the_cost_line_says_na_with_the_reason() -> None:
    rate = {"client_cpu_ms": 0.8, "machine_busy": 0.5}
    assert "server CPU" not in bound_line(rate)  # no probe, or a server elsewhere
    assert "server CPU 1.25 ms/commit" in bound_line({**rate, "server_cpu_ms": 1.25})
    line = bound_line({**rate, "server_cpu_na": "pid 7 is a different process"})
    assert "server CPU n/a (pid 7 is a different process)" in line

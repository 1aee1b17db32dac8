"""``chronobench generate --status PROMPTS COMPLETIONS [--also FILE] [--log LOG]``.

How far an accumulating ``generate`` run is, read from its files alone (no process is
asked, no model loaded): the prompts answered in ``COMPLETIONS`` and every ``--also``
file (a second generator's output) out of ``PROMPTS``, per reply budget (answers and
summaries cost very differently), and the CPU seconds left. The rate is the newest
``CPU-s ... per prompt`` figure each ``--log`` holds (``generate`` writes one after every
batch, this process's own CPU time, so other work on a shared machine does not inflate
it), or ``--cpu-s``. The figure is what an answer costs; a prompt with a larger reply
budget counts ``--long-factor`` answers, a rough figure: state it with the estimate.
Exits 0 when every prompt is answered, 1 while some are not (a script can wait on it).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Progress", "latest_rate", "main", "progress"]

# What ``standalone_generate.run`` logs after each batch.
_RATE = re.compile(r"([\d.]+) CPU-s, [\d.]+ s wall per prompt")


@dataclass
class Progress:
    """Done / total per ``max_new_tokens`` budget, and what no file answers."""

    total: dict[int, int] = field(default_factory=dict)
    done: dict[int, int] = field(default_factory=dict)
    stray: int = 0  # replies to prompts that PROMPTS does not hold

    @property
    def answered(self) -> int:
        return sum(self.done.values())

    @property
    def prompts(self) -> int:
        return sum(self.total.values())

    def left(self, budget: int) -> int:
        return self.total[budget] - self.done.get(budget, 0)

    def cpu_s_left(self, rate: float, long_factor: float) -> float:
        """CPU seconds left at ``rate`` a prompt of the smallest budget, ``long_factor``
        times that for each larger one."""
        if not self.total:
            return 0.0
        short = min(self.total)
        return sum(self.left(b) * rate * (1.0 if b == short else long_factor) for b in self.total)


def _ids(path: Path) -> set[str]:
    out = set()
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                out.add(str(json.loads(line)["id"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                # generate replaces its file by rename, so a bad line is no write in
                # progress: name it rather than guess a count.
                raise SystemExit(
                    f"{path}:{n}: not a completion (a JSON object with `id`)"
                ) from None
    return out


def progress(prompts: Path, completions: Sequence[Path]) -> Progress:
    """Count ``prompts``' ids answered by any of ``completions`` (missing files: none)."""
    budget_of: dict[str, int] = {}
    with prompts.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                budget_of[str(rec["id"])] = int(rec["params"]["max_new_tokens"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise SystemExit(
                    f"{prompts}:{n}: not an exported prompt (needs `id` and "
                    "`params.max_new_tokens`); give the file backbone=export wrote"
                ) from None
    answered: set[str] = set()
    for path in completions:
        if path.is_file():
            answered |= _ids(path)
    out = Progress()
    for pid, budget in budget_of.items():
        out.total[budget] = out.total.get(budget, 0) + 1
        if pid in answered:
            out.done[budget] = out.done.get(budget, 0) + 1
    out.stray = len(answered - budget_of.keys())
    return out


def latest_rate(log: Path) -> float | None:
    """The newest CPU-s-per-prompt figure in a ``generate`` log (None: none yet)."""
    rate = None
    with log.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            for m in _RATE.finditer(line):
                rate = float(m.group(1))
    return rate


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="chronobench generate --status", description=__doc__)
    p.add_argument("prompts", type=Path, help="the prompts file backbone=export wrote")
    p.add_argument("completions", type=Path, help="the completions file being written")
    p.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        metavar="COMPLETIONS",
        help="another generator's completions file for the same prompts (repeatable)",
    )
    p.add_argument(
        "--log",
        type=Path,
        action="append",
        default=[],
        help="a generate log: its newest CPU-s per prompt is the rate (repeatable: the mean)",
    )
    p.add_argument("--cpu-s", type=float, default=None, help="CPU-s an answer (instead of --log)")
    p.add_argument(
        "--long-factor",
        type=float,
        default=10.0,
        help="a larger-budget prompt (a summary) costs this many answers (default 10: rough)",
    )
    args = p.parse_args([a for a in argv if a != "--status"])
    for path in (args.prompts, *args.log):
        if not path.is_file():
            p.error(f"{path}: no such file")
    got = progress(args.prompts, [args.completions, *args.also])
    for budget in sorted(got.total):
        print(
            f"max_new_tokens {budget}: {got.done.get(budget, 0):,} of {got.total[budget]:,} "
            f"answered, {got.left(budget):,} left"
        )
    print(f"all: {got.answered:,} of {got.prompts:,} answered, {got.prompts - got.answered:,} left")
    if got.stray:
        print(f"note: {got.stray:,} replies answer prompts {args.prompts} does not hold")
    rates = [r for r in (latest_rate(log) for log in args.log) if r is not None]
    rate = args.cpu_s if args.cpu_s is not None else (sum(rates) / len(rates) if rates else None)
    if rate is None:
        print("CPU-s left: give --log GENERATE_LOG (or --cpu-s) for an estimate")
    else:
        left = got.cpu_s_left(rate, args.long_factor)
        print(
            f"CPU-s left: ~{left:,.0f} ({left / 3600:.1f} h of one core) at {rate:.2f} CPU-s "
            f"an answer, a longer reply counted as {args.long_factor:g} answers"
        )
    return 0 if got.answered == got.prompts else 1

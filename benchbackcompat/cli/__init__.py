"""The benchbackcompat command: run a benchmark, list what is installed, inspect and publish results.

One module per command or group (``run``; ``list`` and ``describe``; ``status``, ``show``, ``compare`` and
``export``; ``pack`` and ``unpack``; ``leaderboard``; ``calibrate``; ``validate`` and ``new-method``): each adds its
parser and handler.
"""
from __future__ import annotations

import argparse
import functools
import logging
import sys

from benchbackcompat.cli import calibrate, listing, packing, plugins, publish, run, stored
from benchbackcompat.cli.options import Parser, logging_options
from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.interrupts import Terminated

COMMANDS = (run, listing, stored, packing, publish, calibrate, plugins)  # in the order `--help` lists their commands


def build_parser() -> argparse.ArgumentParser:
    from benchbackcompat.version import __version__

    parser = Parser(prog="benchbackcompat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    logging_options(parser, {"verbose": 0, "quiet": False, "log_file": None, "progress": None})
    after_command = Parser(add_help=False)  # after the command too; given there, they win
    logging_options(after_command)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    sub.add_parser = functools.partial(sub.add_parser, parents=[after_command])  # every command takes them
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from benchbackcompat.runtime import logs
        from benchbackcompat.runtime.interrupts import watching

        logs.configure(-1 if args.quiet else args.verbose, args.log_file, args.progress)
        with watching():  # a real Ctrl-C stops the run; a KeyboardInterrupt raised by plugin code fails its cell
            return args.handler(args)
    except BenchError as error:
        logging.getLogger("benchbackcompat").error(str(error))
        return 2
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM where a run stops its workers first (Terminated)
        stopped = "stopped by SIGTERM" if isinstance(interrupt, Terminated) else "interrupted"
        logging.getLogger("benchbackcompat").error(f"{stopped}: finished steps are saved; run the same command again to resume")
        return 143 if isinstance(interrupt, Terminated) else 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as Unix tools do
        _silence_stdout()
        return 0
    except OSError as error:  # a full or read-only disk, a missing folder: one line naming the path
        where = f" {error.filename}" if error.filename else ""
        print(f"error: cannot access{where}: {error.strerror or error}; check the path, its permissions and the free "
              "space", file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of a closed pipe raises nothing."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (captured): nothing to flush
        pass

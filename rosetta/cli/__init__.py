"""The `rosetta` command: parses arguments, calls the library, prints. No logic of its own.

One module per command (`models`, `convert`, `verify`, `bench`, `conformance`, `env`), each with `add_parser(commands, common)` and
`run(args) -> int`; `options` holds what they share.

Exit status (rosetta.verify.results.exit_status): 0 when no verdict is FAIL or ERROR, 1 when any is FAIL (with
--strict: any is not PASS), 2 on a usage or input error, 3 when any is ERROR and none is FAIL, or when the
machine failed the run outside any row (out of memory, disk full). An error that ends the run is one line on
stderr, never a traceback (-v shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback

from rosetta import api
from rosetta.cli import bench, conformance, convert, env, models, verify
from rosetta.cli.flags import as_flags
from rosetta.cli.options import EPILOG_EXIT, EXIT_ERROR, EXIT_FAIL, EXIT_PASS, EXIT_USAGE, Parser
from rosetta.errors import RosettaError, plain
from rosetta.imports import entries_restored
from rosetta.version import __version__

__all__ = ["main", "build_parser", "EXIT_PASS", "EXIT_FAIL", "EXIT_USAGE"]

COMMANDS = {"models": models.run, "convert": convert.run, "verify": verify.run, "bench": bench.run,
            "conformance": conformance.run, "env": env.run}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rosetta", description="Convert deep-learning models between frameworks, "
                    "verify that the converted model computes the same function, and time it.",
                    epilog=EPILOG_EXIT)
    parser.add_argument("--version", action="version", version=f"rosetta {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show framework logs and failure details")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    common = argparse.ArgumentParser(add_help=False)  # -v also after the command: `rosetta verify -v`
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="show framework logs and failure details")
    for command in (models, convert, verify, bench, conformance, env):
        command.add_parser(commands, common)
    return parser


def _error_line(error: Exception) -> tuple[str, int]:
    """What main prints for an error that ends the run, and its exit status: 2 for what the user can fix in
    the command (input, options, files named), 3 when the machine failed the run (out of memory, disk full)
    or rosetta itself did (a bug: -v shows where)."""
    from rosetta.errors import EnvironmentFailed, describe_os_error, environment_cause, one_line

    cause = environment_cause(error)
    if cause or isinstance(error, EnvironmentFailed):
        return as_flags(cause or str(error)), EXIT_ERROR
    if isinstance(error, RosettaError):  # the library names its parameters; the command line, its flags
        return as_flags(str(error)), EXIT_USAGE
    if isinstance(error, OSError):  # a file the user named cannot be read or written
        return describe_os_error(error), EXIT_USAGE
    return f"rosetta failed: {one_line(error)} (a bug: run with -v for the traceback, and report it)", EXIT_ERROR


def parse_anywhere(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The command line with options anywhere after the command, as people type them (`rosetta verify ref.py:net
    --trust-code --input ... ported.keras`): the command's own parser reads the rest intermixed (argparse's
    parse_intermixed_args), the global options (-v) before it as usual."""
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    at = next((n for n, token in enumerate(argv) if token in commands.choices), None)
    if at is None or any(token not in ("-v", "--verbose") for token in argv[:at]):
        return parser.parse_args(argv)
    args = commands.choices[argv[at]].parse_intermixed_args(argv[at + 1:])
    args.command = argv[at]
    args.verbose = getattr(args, "verbose", False) or bool(argv[:at])
    return args


# what main sets in os.environ for its workers, and puts back when it returns: a program (or a test) that calls
# main twice sees its own environment again, and its warm workers, fingerprinted by it, stay warm
_SET_BY_MAIN = ("ROSETTA_WORKER_TIMEOUT", "TF_CPP_MIN_LOG_LEVEL")


def _stopped_by_signal() -> int:
    """130 or 143, said in one line, where a SIGINT or SIGTERM came whose exception the code it landed in turned
    into another (an error, a row) and the run went on; else 0."""
    import signal

    from rosetta.processes import signal_received

    received = signal_received()
    if received is None:
        return 0
    terminated = received == signal.SIGTERM
    print(f"rosetta: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
    return 143 if terminated else 130


def main(argv: list[str] | None = None) -> int:
    """The `rosetta` command (`argv` None: sys.argv), or one run of it in this process (`argv` given: the tests,
    which go on after it). The command, stopped by a signal, exits as soon as its exit handlers have run (the
    workers shut down): the interpreter's teardown of torch, TensorFlow and the rest that follows took 0.7 s of
    a side-by-side run's 1.8 s stop on a loaded machine, and nothing of rosetta's is left to it."""
    status = _run(argv)
    if argv is None and status in (130, 143):
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)
    return status


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parse_anywhere(parser, sys.argv[1:] if argv is None else [str(a) for a in argv])
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    import logging
    import warnings

    from rosetta.processes import Terminated, raise_on_sigterm

    with warnings.catch_warnings(), entries_restored(os.environ, _SET_BY_MAIN):
        if getattr(args, "timeout", None):
            os.environ["ROSETTA_WORKER_TIMEOUT"] = str(args.timeout)
        if not args.verbose:  # quiet on success: framework logs and warnings only with -v
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
        restore_sigterm = raise_on_sigterm()  # SIGTERM as Ctrl-C: the same cleanup runs, then exit 143
        try:
            api.check_settings()
            status = COMMANDS[args.command](args)
            return _stopped_by_signal() or status
        except Exception as error:  # one line, never a traceback (-v shows it)
            if args.verbose:
                traceback.print_exc()
            stopped = _stopped_by_signal()
            if stopped:
                return stopped
            message, status = _error_line(error)
            print(f"rosetta: error: {plain(message)}", file=sys.stderr)
            return status
        except KeyboardInterrupt as interrupt:
            terminated = isinstance(interrupt, Terminated)
            print(f"rosetta: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
            return 143 if terminated else 130
        finally:
            restore_sigterm()
            logging.disable(logging.NOTSET)

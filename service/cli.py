"""The `titangrade` command. Each domain registers its own subcommands; this module only dispatches.

`titangrade grade` is a one-shot process whose start-up is part of every grade it prints, so it builds
a parser with the engine's `grade` command alone: nothing of the service (FastAPI, SQLAlchemy, the
authoring tools) is imported for it. Run as the process's entry point (`main()` without argv), it also
ends the process as soon as its result is printed and its sandbox closed, skipping the interpreter's
teardown of every module it loaded (0.3-1 s on a busy 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType

ONE_SHOT = "grade"  # the engine command that gets a parser of its own (see the module docstring)


def _parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(prog="titangrade", description="Grader for the TorchTitan Wordle course")
    return parser, parser.add_subparsers(dest="command", required=True)


def _grading_cli() -> ModuleType | None:
    try:
        import grading.cli as grading_cli
    except ModuleNotFoundError as exc:  # the engine's commands are optional for the service
        if exc.name != "grading.cli":
            raise
        return None
    return grading_cli


def build_parser() -> argparse.ArgumentParser:
    parser, sub = _parser()
    from service import commands

    commands.register(sub)
    from service.intake import commands as intake_commands
    from service.webhooks import commands as webhook_commands

    webhook_commands.register(sub, deliver=commands.cmd_deliver)  # the outbox loop, wired in service/commands.py
    intake_commands.register(sub)
    from service.courses import commands as course_commands
    from service.lti import commands as lti_commands
    from service.submissions import commands as submission_commands

    lti_commands.register(sub)
    submission_commands.register(sub)
    course_commands.register(sub)
    grading_cli = _grading_cli()
    if grading_cli is not None:
        grading_cli.register(sub)
    return parser


def build_grade_parser() -> argparse.ArgumentParser | None:
    """The parser for `titangrade grade` alone; None when the engine is not installed."""
    grading_cli = _grading_cli()
    if grading_cli is None:
        return None
    parser, sub = _parser()
    grading_cli.register_grade(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`argv` None: this is the process's entry point (the `titangrade` script), see the module docstring."""
    args_in = sys.argv[1:] if argv is None else argv
    parser = build_grade_parser() if args_in[:1] == [ONE_SHOT] else None
    args = (parser or build_parser()).parse_args(args_in)
    code = int(args.func(args) or 0)
    if parser is not None and argv is None:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process at once: output flushed, nothing left to clean (the command closed its sandbox)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())

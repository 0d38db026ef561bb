"""The `titangrade` command. Each domain registers its own subcommands; this module only dispatches."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="titangrade", description="Grader for the TorchTitan Wordle course")
    sub = parser.add_subparsers(dest="command", required=True)
    from service import commands

    commands.register(sub)
    from service.webhooks import commands as webhook_commands

    webhook_commands.register(sub)
    from service.lti import commands as lti_commands

    lti_commands.register(sub)
    try:
        import grading.cli as grading_cli
    except ModuleNotFoundError as exc:  # the engine's commands are optional for the service
        if exc.name != "grading.cli":
            raise
    else:
        grading_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

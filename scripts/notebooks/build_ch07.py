"""Build the chapter 07 exercises: manifests, templates, solutions, answer files, mistake notebooks.

Run: .venv/bin/python scripts/notebooks/build_ch07.py [name ...]
"""
from __future__ import annotations

import sys

import nbkit_ch07_08 as kit

SPECS = ["wordle_reward", "agent_loop", "grpo_math", "dry_run_config", "three_step_training"]


def main(names: list[str]) -> None:
    for name in names or SPECS:
        try:
            module = __import__(f"ch07_{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ch07_{name}":
                raise
            print(f"ch07.{name}: no spec yet, skipped")
            continue
        kit.build(module.spec())


if __name__ == "__main__":
    main(sys.argv[1:])

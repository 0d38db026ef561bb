"""Build the chapter 08 exercises: manifests, templates, solutions, answer files, mistake notebooks.

Run: .venv/bin/python scripts/notebooks/build_ch08.py [name ...]
"""
from __future__ import annotations

import sys

import nbkit_ch07_08 as kit

SPECS = ["troubleshooting", "perf_comparison", "lr_schedule"]


def main(names: list[str]) -> None:
    for name in names or SPECS:
        try:
            module = __import__(f"ch08_{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ch08_{name}":
                raise
            print(f"ch08.{name}: no spec yet, skipped")
            continue
        kit.build(module.spec())


if __name__ == "__main__":
    main(sys.argv[1:])

"""Build chapter 06's exercises (manifest, template, answer file, solution, mistake fixtures).

Run: .venv/bin/python scripts/notebooks/build_ch06.py  (regenerates every file; commit the outputs).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ch05_06_common import write  # noqa: E402

MODULES = ["ch06_mesh", "ch06_offload", "ch06_varlen", "ch06_converter", "ch06_cp"]


def main() -> None:
    import importlib

    for name in MODULES:
        spec = importlib.import_module(name).spec()
        write(spec)
        print("wrote", spec.id)


if __name__ == "__main__":
    main()

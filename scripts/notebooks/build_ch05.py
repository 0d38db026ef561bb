"""Build chapter 05's exercises (manifest, template, answer file, solution, mistake fixtures).

Run: .venv/bin/python scripts/notebooks/build_ch05.py  (regenerates every file; commit the outputs).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ch05_06_common import write  # noqa: E402

MODULES = ["ch05_fsdp", "ch05_names", "ch05_flavor", "ch05_per_tensor"]


def main() -> None:
    import importlib

    for name in MODULES:
        spec = importlib.import_module(name).spec()
        write(spec)
        print("wrote", spec.id)


if __name__ == "__main__":
    main()

"""`titangrade ...` run in this process for the CLI tests (a subprocess would spend seconds importing)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess


def cli(*args: str, db_url: str) -> subprocess.CompletedProcess:
    """The command in this process (each subprocess would spend seconds importing): exit code, stdout, stderr."""
    from service.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("TITANGRADE_DATABASE_URL")
    os.environ["TITANGRADE_DATABASE_URL"] = db_url
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
                if isinstance(exc.code, str):
                    err.write(exc.code)
    finally:
        if old is None:
            del os.environ["TITANGRADE_DATABASE_URL"]
        else:
            os.environ["TITANGRADE_DATABASE_URL"] = old
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

"""`titangrade ...` run in this process for the CLI tests (a subprocess would spend seconds importing)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess


def cli(*args: str, db_url: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command in this process (each subprocess would spend seconds importing): exit code, stdout, stderr.
    `db_url` sets TITANGRADE_DATABASE_URL; `env`, any other variables; both are restored afterwards."""
    from service.cli import main

    variables = dict(env or {})
    if db_url is not None:
        variables["TITANGRADE_DATABASE_URL"] = db_url
    out, err = io.StringIO(), io.StringIO()
    old = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
                if isinstance(exc.code, str):
                    err.write(exc.code)
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

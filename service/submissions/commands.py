"""`titangrade submissions notebook ID`: a client command over the API, like `titangrade submit`. Building
its parser imports nothing of the web or database stack (tests/service/test_cli_parser_imports.py)."""

from __future__ import annotations

import argparse
import os
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submissions", help="read submissions through the API")
    ssub = p.add_subparsers(dest="submissions_command", required=True)
    c = ssub.add_parser("notebook", help="download a submission's notebook, byte for byte as it was uploaded")
    c.add_argument("id", help="the submission id (from `titangrade submit` or the submission page)")
    c.add_argument("-o", "--output", default=None, help="file to write (default ID.ipynb; - for standard output)")
    c.add_argument("--url", default=os.environ.get("TITANGRADE_URL", "http://127.0.0.1:8000"))
    c.add_argument("--token", default=os.environ.get("TITANGRADE_TOKEN"))
    c.set_defaults(func=cmd_notebook)


def cmd_notebook(args) -> int:
    # imported when the command runs: the client pulls in httpx, which the parser must not load
    from service.client import download_notebook

    if not args.token:
        sys.exit("titangrade: no token; set TITANGRADE_TOKEN or pass --token (ask an instructor for one)")
    out = args.output or f"{args.id}.ipynb"
    return download_notebook(url=args.url, token=args.token, submission_id=args.id, out=out)

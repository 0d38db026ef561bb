"""`titangrade intake add|confirm-issuer|list|rotate|remove`: integrations that POST signed submissions.

Each command imports what it uses when it runs, so building the parser stays cheap (service/cli.py).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("intake", help="integrations that may POST signed submissions into a course")
    i = p.add_subparsers(dest="intake_command", required=True)
    c = i.add_parser("add", help="prints the integration's intake URL and secret (shown once)")
    c.add_argument("--course", required=True)
    c.add_argument("--name", required=True)
    c.add_argument(
        "--issuer",
        default=None,
        help="leave out: its own issuer intake:COURSE:NAME; else link it (as an admin) to this issuer's identities",
    )
    c.set_defaults(func=cmd_intake_add)
    c = i.add_parser("confirm-issuer", help="vouch for the issuer of an integration made before 0008")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_intake_confirm_issuer)
    c = i.add_parser("list")
    c.add_argument("--course", default=None)
    c.set_defaults(func=cmd_intake_list)
    c = i.add_parser("rotate")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_intake_rotate)
    c = i.add_parser("remove")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_intake_remove)


def cmd_intake_add(args) -> int:
    from service import bootstrap
    from service.intake import service

    with bootstrap.writing() as (_, s):
        row = service.create(s, name=args.name, course=args.course, issuer=args.issuer, linked_by="cli", by="cli")
        print(f"integration {row.id}: POST {service.intake_url(row)} (course {row.course}, issuer {row.issuer})")
        print(f"secret (shown once): {row.secret}")
    return 0


def cmd_intake_list(args) -> int:
    from service import bootstrap
    from service.intake import service

    _, sessions = bootstrap.command_sessions()
    with sessions() as s:
        rows = service.list_for(s, course=args.course)
        s.commit()
    for r in rows:
        print(f"{r.id:>5}  {r.name:24} {r.course:16} {r.issuer} ({r.issuer_kind})")
    return 0


def cmd_intake_rotate(args) -> int:
    from service import bootstrap
    from service.intake import service

    with bootstrap.writing() as (settings, s):
        secret = service.rotate(
            s,
            integration=service.get(s, course=None, integration_id=args.id),
            overlap_s=settings.webhook_rotation_overlap_s,
        )
    print(f"new secret for integration {args.id} (shown once): {secret}")
    return 0


def cmd_intake_confirm_issuer(args) -> int:
    from service import bootstrap
    from service.intake import service

    with bootstrap.writing() as (_, s):
        row = service.get(s, course=None, integration_id=args.id)
        service.confirm_issuer(s, integration=row, by="cli")
        print(f"titangrade: integration {row.id} acts for identities of {row.issuer} ({row.issuer_kind})")
    return 0


def cmd_intake_remove(args) -> int:
    from service import bootstrap
    from service.intake import service

    with bootstrap.writing() as (_, s):
        service.remove(s, integration=service.get(s, course=None, integration_id=args.id))
    print(f"titangrade: integration {args.id} removed")
    return 0

"""`titangrade webhooks add|list|rotate|remove|enable|replay|deliver`: a course's webhook endpoints.

Each command imports what it uses when it runs, so building the parser stays cheap (service/cli.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def register(sub: argparse._SubParsersAction, *, deliver: Callable[[argparse.Namespace], int]) -> None:
    """`deliver` runs the outbox's delivery loop: the composition root supplies it (service/commands.py)."""
    p = sub.add_parser("webhooks", help="grade-event webhooks (Standard Webhooks) of a course")
    w = p.add_subparsers(dest="webhooks_command", required=True)
    c = w.add_parser("add", help="register an endpoint; prints its id and signing secret (shown once)")
    c.add_argument("--course", required=True)
    c.add_argument("--url", required=True)
    c.add_argument(
        "--events",
        default="grade.stored,grade.changed,submission.not_gradable",
        help="comma-separated event types (default: the grade events; add submission.received to get uploads too)",
    )
    c.add_argument("--description", default="")
    c.set_defaults(func=cmd_add)
    c = w.add_parser("list", help="endpoints (never their secrets)")
    c.add_argument("--course", default=None)
    c.set_defaults(func=cmd_list)
    c = w.add_parser("rotate", help="a new secret; the old one keeps signing for TITANGRADE_WEBHOOK_ROTATION_OVERLAP_S")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_rotate)
    c = w.add_parser("remove", help="stop sending to an endpoint (its delivery log is kept)")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_remove)
    c = w.add_parser("enable", help="re-enable an endpoint disabled by a 410 Gone; what it held is sent now")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_enable)
    c = w.add_parser("replay", help="send an event (--event) or a time range (--since [--until]) again")
    c.add_argument("id", type=int, help="the endpoint")
    c.add_argument("--event", type=int, default=None)
    c.add_argument("--since", default=None, help="RFC 3339, e.g. 2026-11-30T12:00:00Z")
    c.add_argument("--until", default=None)
    c.set_defaults(func=cmd_replay)
    c = w.add_parser("deliver", help="run the delivery loop (serve runs one too; several may share a database)")
    c.add_argument("--burst", action="store_true", help="exit once nothing is due")
    c.set_defaults(func=deliver)


def cmd_add(args) -> int:
    from service import bootstrap
    from service.outbox.ssrf import AddressPolicy
    from service.webhooks import service

    with bootstrap.writing() as (settings, s):
        row = service.create(
            s,
            course=args.course,
            url=args.url,
            policy=AddressPolicy.from_settings(settings),
            event_types=[e.strip() for e in args.events.split(",") if e.strip()],
            description=args.description,
            by="cli",
        )
        print(f"endpoint {row.id} for course {row.course}: {row.url} ({', '.join(row.event_types)})")
        print(f"secret (shown once): {row.secret}")
    return 0


def cmd_list(args) -> int:
    from service import bootstrap
    from service.timefmt import rfc3339
    from service.webhooks import service

    _, sessions = bootstrap.command_sessions()
    with sessions() as s:
        rows = service.list_for(s, course=args.course)
        off = service.disabled(s, endpoint_ids=[r.id for r in rows])
        s.commit()
    print(f"{'id':>5}  {'course':16} {'events':48} url")
    for r in rows:
        rotating = f"  (old secret until {rfc3339(r.previous_expires_at)})" if r.previous_secret else ""
        print(f"{r.id:>5}  {r.course[:16]:16} {','.join(r.event_types)[:48]:48} {r.url}{rotating}")
        if (d := off.get(r.id)) is not None:
            since = f" since {rfc3339(d.since)}" if d.since else ""
            print(f"       DISABLED{since}, {d.held} held: {d.reason[:200]}")
    return 0


def cmd_enable(args) -> int:
    from service import bootstrap
    from service.webhooks import service

    with bootstrap.writing() as (_, s):
        resumed = service.enable(s, endpoint=service.get(s, course=None, endpoint_id=args.id))
    print(f"titangrade: endpoint {args.id} enabled; {resumed} held deliveries are sent now")
    return 0


def cmd_rotate(args) -> int:
    from service import bootstrap
    from service.webhooks import service

    with bootstrap.writing() as (settings, s):
        row = service.get(s, course=None, endpoint_id=args.id)
        secret = service.rotate(s, endpoint=row, overlap_s=settings.webhook_rotation_overlap_s)
    print(f"new secret for endpoint {args.id} (shown once): {secret}")
    print(f"the old secret also signs for {settings.webhook_rotation_overlap_s:.0f} s")
    return 0


def cmd_remove(args) -> int:
    from service import bootstrap
    from service.webhooks import service

    with bootstrap.writing() as (_, s):
        service.remove(s, endpoint=service.get(s, course=None, endpoint_id=args.id))
    print(f"titangrade: endpoint {args.id} removed")
    return 0


def cmd_replay(args) -> int:
    import datetime as dt

    from service import bootstrap
    from service.webhooks import service

    def when(text):
        if text is None:
            return None
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value

    with bootstrap.writing(ValueError) as (_, s):
        ids = service.replay(
            s,
            endpoint=service.get(s, course=None, endpoint_id=args.id),
            event_id=args.event,
            since=when(args.since),
            until=when(args.until),
        )
    print(f"titangrade: {len(ids)} deliveries queued again")
    return 0

"""`titangrade webhooks add|list|rotate|remove|enable|replay|deliver` and `titangrade intake add|list|...`."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("webhooks", help="grade-event webhooks (Standard Webhooks) of a course")
    w = p.add_subparsers(dest="webhooks_command", required=True)
    c = w.add_parser("add", help="register an endpoint; prints its id and signing secret (shown once)")
    c.add_argument("--course", required=True)
    c.add_argument("--url", required=True)
    c.add_argument(
        "--events",
        default="grade.stored,grade.changed,submission.not_gradable",
        help="comma-separated event types (default: all)",
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
    c.set_defaults(func=cmd_deliver)

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


def _sessions():
    from service.commands import _engine, _settings
    from service.db import make_sessionmaker

    settings = _settings()
    return settings, make_sessionmaker(_engine(settings, migrate=False))


def _fail(exc) -> None:
    sys.exit(f"titangrade: {getattr(exc, 'message', exc)}")


@contextlib.contextmanager
def _writing(*errors: type[Exception]):
    """One transaction for a command; a ServiceError (or one of `errors`) ends the CLI with its message."""
    from service.db import transaction
    from service.errors import ServiceError

    caught: tuple[type[Exception], ...] = (ServiceError, *errors)
    settings, sessions = _sessions()
    try:
        with transaction(sessions) as s:
            yield settings, s
    except caught as exc:
        _fail(exc)


def cmd_add(args) -> int:
    from service.webhooks import service
    from service.webhooks.ssrf import AddressPolicy

    with _writing() as (settings, s):
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
    from service.timefmt import rfc3339
    from service.webhooks import service

    _, sessions = _sessions()
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
    from service.webhooks import service

    with _writing() as (_, s):
        resumed = service.enable(s, endpoint=service.get(s, course=None, endpoint_id=args.id))
    print(f"titangrade: endpoint {args.id} enabled; {resumed} held deliveries are sent now")
    return 0


def cmd_rotate(args) -> int:
    from service.webhooks import service

    with _writing() as (settings, s):
        row = service.get(s, course=None, endpoint_id=args.id)
        secret = service.rotate(s, endpoint=row, overlap_s=settings.webhook_rotation_overlap_s)
    print(f"new secret for endpoint {args.id} (shown once): {secret}")
    print(f"the old secret also signs for {settings.webhook_rotation_overlap_s:.0f} s")
    return 0


def cmd_remove(args) -> int:
    from service.webhooks import service

    with _writing() as (_, s):
        service.remove(s, endpoint=service.get(s, course=None, endpoint_id=args.id))
    print(f"titangrade: endpoint {args.id} removed")
    return 0


def cmd_replay(args) -> int:
    import datetime as dt

    from service.webhooks import service

    def when(text):
        if text is None:
            return None
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value

    with _writing(ValueError) as (_, s):
        ids = service.replay(
            s,
            endpoint=service.get(s, course=None, endpoint_id=args.id),
            event_id=args.event,
            since=when(args.since),
            until=when(args.until),
        )
    print(f"titangrade: {len(ids)} deliveries queued again")
    return 0


def start_delivery_loop(settings, engine):
    """The delivery loop of `serve`, in a daemon thread; returns it (set `.stop` to end it)."""
    from service.db import make_sessionmaker
    from service.webhooks.delivery import build_deliverer

    deliverer = build_deliverer(settings, sessions=make_sessionmaker(engine))
    threading.Thread(target=deliverer.run, name="tg-deliver-loop", daemon=True).start()
    return deliverer


def cmd_deliver(args) -> int:
    from service.commands import _engine, _logging, _settings
    from service.db import make_sessionmaker
    from service.webhooks.delivery import build_deliverer

    _logging()
    settings = _settings()
    deliverer = build_deliverer(settings, sessions=make_sessionmaker(_engine(settings, migrate=False)))
    signal.signal(signal.SIGTERM, lambda *_: deliverer.stop.set())
    print(f"titangrade: delivery loop ({settings.webhook_concurrency} at once)", flush=True)
    try:
        deliverer.run(burst=args.burst)
    except KeyboardInterrupt:
        deliverer.stop.set()
    return 0


def cmd_intake_add(args) -> int:
    from service.intake import service

    with _writing() as (_, s):
        row = service.create(s, name=args.name, course=args.course, issuer=args.issuer, linked_by="cli", by="cli")
        print(f"integration {row.id}: POST {service.intake_url(row)} (course {row.course}, issuer {row.issuer})")
        print(f"secret (shown once): {row.secret}")
    return 0


def cmd_intake_list(args) -> int:
    from service.intake import service

    _, sessions = _sessions()
    with sessions() as s:
        rows = service.list_for(s, course=args.course)
        s.commit()
    for r in rows:
        print(f"{r.id:>5}  {r.name:24} {r.course:16} {r.issuer} ({r.issuer_kind})")
    return 0


def cmd_intake_rotate(args) -> int:
    from service.intake import service

    with _writing() as (settings, s):
        secret = service.rotate(
            s,
            integration=service.get(s, course=None, integration_id=args.id),
            overlap_s=settings.webhook_rotation_overlap_s,
        )
    print(f"new secret for integration {args.id} (shown once): {secret}")
    return 0


def cmd_intake_confirm_issuer(args) -> int:
    from service.intake import service

    with _writing() as (_, s):
        row = service.get(s, course=None, integration_id=args.id)
        service.confirm_issuer(s, integration=row, by="cli")
        print(f"titangrade: integration {row.id} acts for identities of {row.issuer} ({row.issuer_kind})")
    return 0


def cmd_intake_remove(args) -> int:
    from service.intake import service

    with _writing() as (_, s):
        service.remove(s, integration=service.get(s, course=None, integration_id=args.id))
    print(f"titangrade: integration {args.id} removed")
    return 0

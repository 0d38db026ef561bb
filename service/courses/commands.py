"""`titangrade courses schedule set|show`, `courses extend` and `courses timezone`: a course's deadlines,
written to the database as the API writes them (service/courses/schedules.py).

Each command imports what it uses when it runs, so building the parser stays cheap (service/cli.py).
"""

from __future__ import annotations

import argparse
import datetime as dt

KINDS = ("none", "per_day", "per_hour", "closed")


def _instant(text: str) -> dt.datetime:
    """An RFC 3339 time with an explicit offset (Z or +hh:mm); a naive one is refused, as by the API."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 time (e.g. 2026-09-30T23:59:00+08:00)") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no offset; add Z or +hh:mm (times are never guessed)")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("courses", help="a course's deadlines: exercise schedules, extensions, time zone")
    c = p.add_subparsers(dest="courses_command", required=True)
    sched = c.add_parser("schedule", help="when an exercise opens and is due, and its late policy")
    s = sched.add_subparsers(dest="schedule_command", required=True)
    put = s.add_parser("set", help="set (replace) one exercise's schedule; its submissions' lateness is recomputed")
    put.add_argument("course")
    put.add_argument("exercise_id")
    put.add_argument("--opens-at", type=_instant, default=None, help="RFC 3339 with an offset; leave out: open now")
    put.add_argument("--due-at", type=_instant, default=None, help="RFC 3339 with an offset; leave out: no due date")
    put.add_argument("--late", choices=KINDS, default="none", help="late policy (default none: late, no penalty)")
    put.add_argument("--percent", type=float, default=0.0, help="per started day/hour late (per_day, per_hour)")
    put.add_argument("--floor", type=float, default=0.0, help="percent of its points late work always keeps")
    put.set_defaults(func=cmd_schedule_set)
    show = s.add_parser("show", help="every scheduled exercise of the course (or one), in UTC and the course's zone")
    show.add_argument("course")
    show.add_argument("exercise_id", nargs="?", default=None)
    show.set_defaults(func=cmd_schedule_show)
    ext = c.add_parser("extend", help="give one learner their own due time for one exercise")
    ext.add_argument("course")
    ext.add_argument("--user", required=True, help="the learner's subject (as the gradebook shows it)")
    ext.add_argument("--issuer", default="titangrade")
    ext.add_argument("--exercise", required=True)
    ext.add_argument("--due-at", type=_instant, required=True, help="RFC 3339 with an offset")
    ext.set_defaults(func=cmd_extend)
    tz = c.add_parser("timezone", help="the IANA zone the course's times are shown in (e.g. Asia/Shanghai)")
    tz.add_argument("course")
    tz.add_argument("zone")
    tz.set_defaults(func=cmd_timezone)


def cmd_schedule_set(args) -> int:
    from service import bootstrap
    from service.courses import schedules
    from service.courses.lateness import LateKind, LatePolicy

    policy = LatePolicy(kind=LateKind(args.late), percent=args.percent, floor_percent=args.floor)
    with bootstrap.writing() as (_, s):
        row = schedules.put_schedule(
            s,
            course=args.course,
            exercise_id=args.exercise_id,
            opens_at=args.opens_at,
            due_at=args.due_at,
            policy=policy,
            by_user="cli",
        )
        view = schedules.schedule_public(
            row, course=args.course, exercise_id=args.exercise_id, zone=schedules.zone_of(s, course=args.course)
        )
    print(_line(view))
    return 0


def _line(view) -> str:
    p = view.late_policy
    policy = p.kind if p.kind in ("none", "closed") else f"{p.kind} {p.percent:g}% floor {p.floor_percent:g}%"
    return (
        f"{view.exercise_id}: opens {view.opens_at_local or '-'} due {view.due_at_local or '-'} "
        f"({view.timezone}); late: {policy}"
    )


def cmd_schedule_show(args) -> int:
    from service import bootstrap
    from service.courses import schedules

    with bootstrap.writing() as (_, s):
        listed = schedules.course_schedules(s, course=args.course, exercise_ids=[])
        ext = [
            schedules.extension_public(e, i, zone=listed.timezone)
            for e, i in schedules.extensions(s, course=args.course)
        ]
    items = [v for v in listed.items if args.exercise_id in (None, v.exercise_id)]
    print(f"course {args.course}, times in {listed.timezone}")
    for view in items:
        print(_line(view))
    if not items:
        print("no schedules: every exercise is open and nothing is late")
    for e in ext:
        if args.exercise_id in (None, e.exercise_id):
            print(f"extension {e.id}: {e.issuer}:{e.user} {e.exercise_id} due {e.due_at_local}")
    return 0


def cmd_extend(args) -> int:
    from service import bootstrap
    from service.courses import schedules

    with bootstrap.writing() as (_, s):
        ident = schedules.find_learner(s, subject=args.user, issuer=args.issuer)
        row = schedules.grant_extension(
            s, course=args.course, identity=ident, exercise_id=args.exercise, due_at=args.due_at, by_user="cli"
        )
        view = schedules.extension_public(row, ident, zone=schedules.zone_of(s, course=args.course))
    print(f"extension {view.id}: {view.issuer}:{view.user} {view.exercise_id} due {view.due_at_local}")
    return 0


def cmd_timezone(args) -> int:
    from service import bootstrap
    from service.courses import schedules

    with bootstrap.writing() as (_, s):
        schedules.set_zone(s, course=args.course, zone=args.zone, by_user="cli")
    print(f"course {args.course}: times shown in {args.zone}")
    return 0

"""Service subcommands: serve, worker, db, tokens, submit, and the outbox's `webhooks deliver` loop.

What they share (settings, logging, the engine, sessions) is service/bootstrap.py; what they run (executor,
worker, delivery loop) is put together in service/wiring.py. Each command imports what it uses when it
runs: building the parser (`titangrade --help`, `titangrade submit`) loads neither SQLAlchemy nor FastAPI.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="start the API and a local worker pool")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--workers", type=int, default=None, help="local grading slots (0 = API only); default TITANGRADE_WORKER_SLOTS"
    )
    p.add_argument(
        "--api-workers",
        type=int,
        default=None,
        help="API processes (PostgreSQL only); grading stays in this one; default TITANGRADE_API_WORKERS (1)",
    )
    _executor_args(p)
    p.add_argument(
        "--no-deliver",
        action="store_true",
        help="do not run the webhook delivery loop here (run `titangrade webhooks deliver` elsewhere)",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("worker", help="run grading workers only (several hosts may share one PostgreSQL)")
    p.add_argument("--slots", type=int, default=None, help="concurrent jobs (default TITANGRADE_WORKER_SLOTS)")
    p.add_argument("--burst", action="store_true", help="exit once the queue is empty")
    _executor_args(p)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("db", help="database schema")
    p.add_argument("action", choices=("upgrade", "current"))
    p.set_defaults(func=cmd_db)

    p = sub.add_parser("tokens", help="API tokens")
    tsub = p.add_subparsers(dest="tokens_command", required=True)
    c = tsub.add_parser("create", help="print a new bearer token (stored hashed); enrols the user in --course")
    c.add_argument(
        "--role",
        required=True,
        choices=("learner", "instructor", "admin"),
        help="learner/instructor need --course; admin is the one global role",
    )
    c.add_argument("--user", required=True, help="the user's subject (id) at the issuer")
    c.add_argument("--course", default=None)
    c.add_argument("--issuer", default="titangrade", help="who vouches for the user (default: titangrade)")
    c.add_argument("--expires-days", type=float, default=90.0, help="lifetime in days (default 90)")
    c.add_argument("--label", default="", help="a note shown by `tokens list`")
    c.set_defaults(func=cmd_tokens_create)
    c = tsub.add_parser("list", help="tokens (never the tokens themselves): id, user, course, state, expiry")
    c.add_argument("--user", default=None, help="only this subject's tokens")
    c.add_argument("--all", action="store_true", help="include revoked and expired tokens")
    c.set_defaults(func=cmd_tokens_list)
    c = tsub.add_parser("revoke", help="revoke tokens by id (from `tokens list`)")
    c.add_argument("ids", nargs="+", type=int)
    c.set_defaults(func=cmd_tokens_revoke)

    p = sub.add_parser("submit", help="upload a notebook, follow its progress, print the result")
    p.add_argument("notebook")
    p.add_argument("--exercise", default=None, help="exercise id (default: from the notebook's metadata)")
    p.add_argument("--url", default=os.environ.get("TITANGRADE_URL", "http://127.0.0.1:8000"))
    p.add_argument("--token", default=os.environ.get("TITANGRADE_TOKEN"))
    p.add_argument("--lang", default=None, help="feedback language: en or zh")
    p.add_argument("--json", action="store_true", help="print the final submission as JSON")
    p.set_defaults(func=cmd_submit)


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default=None,
        help="where grading runs: a local process pool or a Ray cluster (default TITANGRADE_EXECUTOR)",
    )
    p.add_argument(
        "--address",
        default=None,
        help="Ray head HOST:PORT or auto, with --executor ray (default TITANGRADE_RAY_ADDRESS)",
    )


def _executor_overrides(args) -> dict:
    out = {}
    if args.executor is not None:
        out["executor"] = args.executor
    if args.address is not None:
        out["ray_address"] = args.address
    return out


def _resolve_sandbox(settings):
    from service.config import UnsafeSettings

    try:
        settings, warning = settings.resolve_sandbox()
    except UnsafeSettings as exc:
        sys.exit(f"titangrade: {exc}")
    if warning:
        print(f"titangrade: {warning}", flush=True)
    return settings


def _engine_when_reachable(settings, stopping: threading.Event):
    """The worker's engine once the database answers: a worker started during an outage waits for it
    (capped exponential backoff, logged) instead of exiting; None when stopped meanwhile."""
    from service.db import SchemaMismatch, check_schema, make_engine
    from service.outage import Backoff, Outage, is_unavailable

    engine = make_engine(settings.database_url)
    backoff = Backoff(base_s=settings.db_retry_base_s, cap_s=settings.db_retry_max_s)
    outage = Outage(who="worker start-up", log=logging.getLogger("titangrade.worker"))
    while not stopping.is_set():
        try:
            check_schema(engine, migrate=False)
        except SchemaMismatch as exc:
            sys.exit(f"titangrade: {exc}")
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            delay_s = backoff.next_s()
            outage.failed(exc, doing="checking the schema", retry_in_s=delay_s)
            stopping.wait(delay_s)
            continue
        outage.recovered()
        return engine
    return None


def _bootstrap_token(settings, sessions) -> None:
    from service.auth.service import create_token, has_admin
    from service.db import transaction

    with transaction(sessions) as s:
        if has_admin(s):
            print(
                "titangrade: tokens: create one with `titangrade tokens create --role learner --user NAME --course C`"
            )
            return
        if settings.mode != "dev":
            print("titangrade: no admin token yet; create one with `titangrade tokens create --role admin --user NAME`")
            return
        token = create_token(s, user="admin", role="admin", label="dev bootstrap")
    print(f"titangrade: DEV MODE bootstrap admin token (shown once, expires in 90 days): {token}")
    print(
        "titangrade: more tokens: `titangrade tokens create --role learner --user NAME --course C` "
        "or POST /api/v1/tokens"
    )


def _build_worker(settings, sessions):
    from service import wiring
    from service.workers.executor import ExecutorUnavailable

    try:
        return wiring.build_worker(settings, sessions=sessions)
    except ExecutorUnavailable as exc:
        sys.exit(f"titangrade: {exc}")


def cmd_serve(args) -> int:
    import uvicorn

    from service import bootstrap, http_deadlines, wiring
    from service.app import create_app

    bootstrap.configure_logging()
    overrides = {} if args.workers is None else {"worker_slots": max(args.workers, 1)}
    if args.api_workers is not None:
        overrides["api_workers"] = args.api_workers
    settings = bootstrap.settings(**overrides, **_executor_overrides(args))
    settings, generated = settings.with_dev_secret()
    if settings.mode == "dev":
        print(
            "titangrade: running in DEV MODE (TITANGRADE_MODE=prod for production: needs "
            "TITANGRADE_SECRET_KEY and a real sandbox)"
        )
    if generated:
        print("titangrade: no TITANGRADE_SECRET_KEY set; generated an ephemeral one for this run")
    if args.workers != 0:
        settings = _resolve_sandbox(settings)
    print(f"titangrade: database {settings.database_url.split('@')[-1]}, sandbox {settings.sandbox}")
    engine = bootstrap.engine(settings, migrate=settings.migrate_on_start)
    app = create_app(settings, engine=engine)
    sessions = bootstrap.sessions(engine)
    _bootstrap_token(settings, sessions)
    worker = thread = None
    if args.workers != 0:
        worker = _build_worker(settings, sessions)
        thread = threading.Thread(target=worker.run, name="tg-worker", daemon=True)
        thread.start()
        print(f"titangrade: {settings.executor} worker with {settings.worker_slots} slot(s)")
    deliverer = None
    if not args.no_deliver:
        deliverer = wiring.start_delivery_loop(settings, sessions=sessions)
    print(f"titangrade: API on http://{args.host}:{args.port}/api/v1 (docs at /api/v1/docs)", flush=True)
    try:
        if settings.api_workers > 1:  # uvicorn's supervisor here (with the worker pool), the API in N children
            print(f"titangrade: {settings.api_workers} API processes", flush=True)
            os.environ["TITANGRADE_SECRET_KEY"] = settings.secret_key  # a generated dev key, shared
            os.environ["TITANGRADE_API_WORKERS"] = str(settings.api_workers)
            uvicorn.run(
                "service.app:app_from_environment",
                factory=True,
                workers=settings.api_workers,
                host=args.host,
                port=args.port,
                log_level="warning",
                access_log=False,
                **http_deadlines.uvicorn_options(settings),
            )
        else:
            uvicorn.run(
                app,
                host=args.host,
                port=args.port,
                log_level="warning",
                access_log=False,
                **http_deadlines.uvicorn_options(settings),
            )
    finally:
        if deliverer is not None:
            deliverer.stop.set()
        if worker is not None:  # drain: finish or hand back running jobs
            worker.request_stop()
            if thread is not None:
                thread.join(settings.shutdown_grace_s + 10)
    return 0


def cmd_worker(args) -> int:
    from service import bootstrap

    bootstrap.configure_logging()
    overrides = ({} if args.slots is None else {"worker_slots": args.slots}) | _executor_overrides(args)
    settings = _resolve_sandbox(bootstrap.settings(**overrides))
    from service import memory

    memory.limit_arenas(settings.malloc_arena_max)  # as serve does, before the worker starts its threads
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    engine = _engine_when_reachable(settings, stopping)
    if engine is None:  # stopped while waiting for the database
        return 0
    worker = _build_worker(settings, bootstrap.sessions(engine))
    for signum in (signal.SIGTERM, signal.SIGINT):  # both drain; no KeyboardInterrupt lands mid-store
        signal.signal(signum, lambda *_: worker.request_stop())
    if stopping.is_set():
        worker.request_stop()
    where = (
        f"Ray cluster {settings.ray_address}"
        if settings.executor == "ray"
        else f"{worker.devices.count} {worker.devices.kind} device(s)"
    )
    print(
        f"titangrade: worker {worker.id} with {settings.worker_slots} slot(s), {where}, sandbox {settings.sandbox}",
        flush=True,
    )
    worker.run(burst=args.burst)  # returns only on a signal or an empty queue in burst mode, after draining
    return 0


def cmd_deliver(args) -> int:
    """`titangrade webhooks deliver`: the outbox's delivery loop (every kind of target), in the foreground."""
    from service import bootstrap, wiring

    bootstrap.configure_logging()
    settings, sessions = bootstrap.command_sessions()
    deliverer = wiring.build_deliverer(settings, sessions=sessions)
    signal.signal(signal.SIGTERM, lambda *_: deliverer.stop.set())
    print(f"titangrade: delivery loop ({settings.webhook_concurrency} at once)", flush=True)
    try:
        deliverer.run(burst=args.burst)
    except KeyboardInterrupt:
        deliverer.stop.set()
    return 0


def cmd_db(args) -> int:
    from service import bootstrap
    from service.db import current_revision, head_revision, make_engine, upgrade

    settings = bootstrap.settings()
    engine = make_engine(settings.database_url)
    if args.action == "upgrade":
        print(f"titangrade: schema at {upgrade(engine)}")
    else:
        print(f"titangrade: schema at {current_revision(engine) or 'empty'} (code expects {head_revision()})")
    return 0


def _token_sessions():
    from service import bootstrap

    return bootstrap.command_sessions()[1]


def cmd_tokens_create(args) -> int:
    from service.auth.service import create_token
    from service.db import transaction

    sessions = _token_sessions()
    try:
        with transaction(sessions) as s:
            token = create_token(
                s,
                user=args.user,
                role=args.role,
                course=args.course,
                issuer=args.issuer,
                expires_in_days=args.expires_days,
                label=args.label,
            )
    except ValueError as exc:
        sys.exit(f"titangrade: {exc} (see `titangrade tokens create --help`)")
    print(token)
    return 0


def cmd_tokens_list(args) -> int:
    from service.auth.service import list_tokens, token_state
    from service.timefmt import rfc3339

    with _token_sessions()() as s:
        rows = list_tokens(s, include_inactive=args.all)
        s.commit()
    rows = [(t, i) for t, i in rows if args.user is None or i.subject == args.user]
    print(f"{'id':>5}  {'state':8} {'user':28} {'role/course':24} {'expires':25} label")
    for t, i in rows:
        scope = "admin (global)" if i.global_role == "admin" and t.course is None else (t.course or "all courses")
        user = i.subject if i.issuer == "titangrade" else f"{i.issuer}:{i.subject}"
        print(
            f"{t.id:>5}  {token_state(t):8} {user[:28]:28} {scope[:24]:24} "
            f"{rfc3339(t.expires_at) or 'never':25} {t.label}"
        )
    return 0


def cmd_tokens_revoke(args) -> int:
    from service.auth.service import revoke_token
    from service.db import transaction

    missing = []
    with transaction(_token_sessions()) as s:
        for token_id in args.ids:
            if revoke_token(s, token_id=token_id) is None:
                missing.append(token_id)
    done = [i for i in args.ids if i not in missing]
    if done:
        print(f"titangrade: revoked {', '.join(map(str, done))}")
    if missing:
        sys.exit(f"titangrade: no token with id {', '.join(map(str, missing))} (see `titangrade tokens list --all`)")
    return 0


def cmd_submit(args) -> int:
    from service.client import submit_and_follow

    if not args.token:
        sys.exit("titangrade: no token; set TITANGRADE_TOKEN or pass --token (ask an instructor for one)")
    return submit_and_follow(
        url=args.url,
        token=args.token,
        notebook=args.notebook,
        exercise_id=args.exercise,
        lang=args.lang,
        as_json=args.json,
    )

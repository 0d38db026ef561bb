"""`titangrade lti platforms add|list|remove|approve`, `titangrade lti keys list|rotate`, `titangrade lti config`,
`titangrade lti roster sync|status COURSE`, `titangrade lti line-items COURSE`, `titangrade lti results COURSE ID`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lti", help="LTI 1.3: platform registrations, the tool's keys and URLs")
    s = p.add_subparsers(dest="lti_command", required=True)
    plat = s.add_parser("platforms", help="LMS platforms allowed to launch titangrade")
    ps = plat.add_subparsers(dest="platforms_command", required=True)
    c = ps.add_parser("add", help="register a platform (the values its LTI 1.3 tool registration shows)")
    c.add_argument("--name", required=True)
    c.add_argument("--issuer", required=True, help="the platform's issuer (iss), e.g. https://canvas.instructure.com")
    c.add_argument("--client-id", required=True, help="the client id the platform gave titangrade")
    c.add_argument("--auth-login-url", required=True, help="the platform's OIDC authorization endpoint")
    c.add_argument("--auth-token-url", required=True, help="the platform's OAuth2 token endpoint")
    c.add_argument("--keyset-url", required=True, help="the platform's public keyset (JWKS) URL")
    c.add_argument("--deployment-id", action="append", required=True, help="repeat for several deployments")
    c.set_defaults(func=cmd_add)
    c = ps.add_parser("list")
    c.set_defaults(func=cmd_list)
    c = ps.add_parser("remove", help="stop launches from a platform and grade passback to it")
    c.add_argument("id", type=int)
    c.set_defaults(func=cmd_remove)
    c = ps.add_parser("approve", help="accept launches from a platform that registered itself (dynamic registration)")
    c.add_argument("id", type=int)
    c.add_argument("--deployment-id", action="append", default=[], help="add a deployment id (repeat for several)")
    c.set_defaults(func=cmd_approve)
    roster = s.add_parser("roster", help="a course's roster from the platform (Names and Role Provisioning Services)")
    rs = roster.add_subparsers(dest="roster_command", required=True)
    c = rs.add_parser("sync", help="read the course's roster now: members become learners/instructors")
    c.add_argument("course")
    c.set_defaults(func=cmd_roster_sync)
    c = rs.add_parser("status", help="when the roster was last synced, its size and the last error")
    c.add_argument("course")
    c.set_defaults(func=cmd_roster_status)
    c = s.add_parser("line-items", help="the course's AGS line items (grade passback targets)")
    c.add_argument("course")
    c.set_defaults(func=cmd_line_items)
    c = s.add_parser("results", help="the results the platform holds for one line item")
    c.add_argument("course")
    c.add_argument("id", type=int, help="the line item's id (titangrade lti line-items COURSE)")
    c.set_defaults(func=cmd_results)
    keys = s.add_parser("keys", help="the tool's signing keys (TITANGRADE_LTI_KEY_DIR)")
    ks = keys.add_subparsers(dest="keys_command", required=True)
    ks.add_parser("list", help="key ids in the JWKS, newest (active) first").set_defaults(func=cmd_keys_list)
    ks.add_parser(
        "rotate", help="a new active key; the old one stays in the JWKS for TITANGRADE_LTI_KEY_RETENTION_S"
    ).set_defaults(func=cmd_keys_rotate)
    s.add_parser("config", help="the URLs to enter in the LMS").set_defaults(func=cmd_config)


def cmd_add(args) -> int:
    from service import bootstrap
    from service.db import transaction
    from service.errors import ServiceError
    from service.lti import service

    _, sessions = bootstrap.command_sessions()
    try:
        with transaction(sessions) as s:
            row = service.create(
                s,
                name=args.name,
                issuer=args.issuer,
                client_id=args.client_id,
                auth_login_url=args.auth_login_url,
                auth_token_url=args.auth_token_url,
                keyset_url=args.keyset_url,
                deployment_ids=args.deployment_id,
            )
            print(f"platform {row.id}: {row.name} ({row.issuer}, client id {row.client_id})")
    except ServiceError as exc:
        sys.exit(f"titangrade: {exc.message}")
    return 0


def cmd_list(args) -> int:
    from service import bootstrap
    from service.lti import service

    _, sessions = bootstrap.command_sessions()
    with sessions() as s:
        for row in service.list_all(s):
            print(
                f"{row.id}\t{row.name}\t{row.issuer}\tclient {row.client_id}\tdeployments "
                f"{','.join(row.deployment_ids)}\t{row.status}"
            )
    return 0


def cmd_remove(args) -> int:
    from service import bootstrap
    from service.db import transaction
    from service.lti import service

    _, sessions = bootstrap.command_sessions()
    with transaction(sessions) as s:
        if service.remove(s, platform_id=args.id) is None:
            sys.exit(f"titangrade: no LTI platform {args.id}")
    print(f"platform {args.id} removed")
    return 0


def _keys():
    from service import bootstrap
    from service.lti.keys import key_store

    return key_store(bootstrap.settings())


def cmd_keys_list(args) -> int:
    for key in reversed(_keys().keys()):
        print(f"{key.kid}\tcreated {dt.datetime.fromtimestamp(key.created_s, dt.UTC).isoformat()}")
    return 0


def cmd_keys_rotate(args) -> int:
    store = _keys()
    key = store.rotate()
    print(f"new active key {key.kid}; the JWKS now holds {len(store.keys())} key(s)")
    return 0


def cmd_config(args) -> int:
    from service import bootstrap
    from service.lti.routes import tool_urls

    print(json.dumps(tool_urls(bootstrap.settings()), indent=2))
    return 0


def cmd_approve(args) -> int:
    from service import bootstrap
    from service.db import transaction
    from service.errors import ServiceError
    from service.lti import registration

    _, sessions = bootstrap.command_sessions()
    try:
        with transaction(sessions) as s:
            row = registration.approve(s, platform_id=args.id, deployment_ids=args.deployment_id)
            print(
                f"platform {row.id} approved: launches from {row.issuer} (deployments {','.join(row.deployment_ids)})"
            )
    except ServiceError as exc:
        sys.exit(f"titangrade: {exc.message}")
    return 0


def _calls():
    from service import bootstrap
    from service.lti.calls import PlatformCalls

    settings = bootstrap.settings()
    return settings, PlatformCalls.from_settings(settings)


def cmd_roster_sync(args) -> int:
    from service import bootstrap
    from service.errors import ServiceError
    from service.lti import nrps

    settings, calls = _calls()
    _, sessions = bootstrap.command_sessions()
    try:
        outcomes = nrps.sync_course(
            sessions, calls=calls, course=args.course, max_members=settings.lti_roster_max_members
        )
    except ServiceError as exc:
        sys.exit(f"titangrade: {exc.message}")
    for o in outcomes:
        print(f"{o.course}: {o.members} members, {o.added} added, {o.deactivated} marked inactive")
    return 0


def cmd_roster_status(args) -> int:
    from service import bootstrap
    from service.lti import nrps
    from service.timefmt import rfc3339

    _, sessions = bootstrap.command_sessions()
    with sessions() as s:
        for row in nrps.status(s, course=args.course):
            print(
                f"context {row['context_id']}\troster service {'yes' if row['roster_service'] else 'no'}\t"
                f"synced {rfc3339(row['synced_at']) or 'never'}\tmembers {row['members']}\t{row['error'] or ''}"
            )
    return 0


def cmd_line_items(args) -> int:
    from service import bootstrap
    from service.lti import lineitems

    _, sessions = bootstrap.command_sessions()
    with sessions() as s:
        for row in lineitems.line_items(s, course=args.course):
            print(f"{row.id}\t{row.exercise_id}\t{row.origin}\t{row.url}")
    return 0


def cmd_results(args) -> int:
    from service import bootstrap
    from service.errors import ServiceError
    from service.lti import lineitems

    _, calls = _calls()
    _, sessions = bootstrap.command_sessions()
    try:
        found = lineitems.read_results(sessions, calls=calls, course=args.course, line_item_id=args.id)
    except ServiceError as exc:
        sys.exit(f"titangrade: {exc.message}")
    print(json.dumps(found, indent=2))
    return 0

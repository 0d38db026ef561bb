"""`titangrade lti platforms add|list|remove`, `titangrade lti keys list|rotate`, `titangrade lti config`."""

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
                f"{','.join(row.deployment_ids)}"
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

"""The tool's keys (0600 files, rotation with the old key kept in the JWKS), platform registration over the
API (admins only) and the CLI, and migration 0005 up and down, on SQLite and PostgreSQL."""
from __future__ import annotations

import stat

import httpx
from alembic import command
from cli_support import cli
from lti_support import CLIENT_ID
from sqlalchemy import inspect


def test_keys_are_private_files_and_rotation_keeps_the_old_key_published(tmp_path):
    from service.lti.keys import KeyStore

    store = KeyStore(tmp_path / "keys", retention_s=3600)
    first = store.active()  # first start: generated
    path = tmp_path / "keys" / f"{first.kid}.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    assert store.active().kid == first.kid  # not regenerated
    second = store.rotate()
    assert store.active().kid == second.kid
    assert [k["kid"] for k in store.jwks()["keys"]] == [second.kid, first.kid]
    assert all(set(k) >= {"kty", "n", "e", "kid", "alg", "use"} and "d" not in k for k in store.jwks()["keys"])
    expired = KeyStore(tmp_path / "keys", retention_s=-1)  # the retention is over: the old key goes
    assert [k["kid"] for k in expired.jwks()["keys"]] == [second.kid]
    assert not path.exists()


def test_the_jwks_and_config_endpoints_and_assertions_use_the_active_key(lti):
    jwks = httpx.get(lti.url + "/lti/jwks", timeout=30).json()
    from service.lti.keys import KeyStore

    assert jwks["keys"][0]["kid"] == KeyStore(lti.keys, retention_s=3600).active().kid
    config = httpx.get(lti.url + "/lti/config", timeout=30).json()
    assert config == {"login_url": lti.url + "/lti/login", "launch_url": lti.url + "/lti/launch",
                      "redirect_url": lti.url + "/lti/launch", "deep_linking_url": lti.url + "/lti/launch",
                      "jwks_url": lti.url + "/lti/jwks"}


def test_platform_registration_api_is_for_admins(lti, svc):
    body = lti.platform.registration("second")
    body["client_id"] = "client-2"
    learner = httpx.post(lti.url + "/api/v1/lti/platforms", json=body, headers=svc.auth(lti.tokens["alice"]),
                         timeout=30)
    assert learner.status_code == 403
    made = httpx.post(lti.url + "/api/v1/lti/platforms", json=body, headers=svc.auth(lti.tokens["root"]), timeout=30)
    assert made.status_code == 201, made.text
    again = httpx.post(lti.url + "/api/v1/lti/platforms", json=body, headers=svc.auth(lti.tokens["root"]), timeout=30)
    assert again.status_code == 409 and again.json()["error"]["code"] == "platform_exists"
    bad = httpx.post(lti.url + "/api/v1/lti/platforms", json={**body, "client_id": "c3", "keyset_url": "ftp://x"},
                     headers=svc.auth(lti.tokens["root"]), timeout=30)
    assert bad.status_code == 422 and "keyset_url" in bad.text
    listed = httpx.get(lti.url + "/api/v1/lti/platforms", headers=svc.auth(lti.tokens["root"]), timeout=30).json()
    assert {p["client_id"] for p in listed} >= {CLIENT_ID, "client-2"}
    pid = made.json()["id"]
    assert httpx.delete(f"{lti.url}/api/v1/lti/platforms/{pid}", headers=svc.auth(lti.tokens["root"]),
                        timeout=30).status_code == 204
    assert httpx.delete(f"{lti.url}/api/v1/lti/platforms/999999", headers=svc.auth(lti.tokens["root"]),
                        timeout=30).status_code == 404
    listed = httpx.get(lti.url + "/api/v1/lti/platforms", headers=svc.auth(lti.tokens["root"]), timeout=30).json()
    assert "client-2" not in {p["client_id"] for p in listed}


def test_lti_commands(sqlite_template, tmp_path):
    import shutil

    db = tmp_path / "cli.db"
    shutil.copyfile(sqlite_template, db)
    env = {"TITANGRADE_DATABASE_URL": f"sqlite:///{db}", "TITANGRADE_LTI_KEY_DIR": str(tmp_path / "k"),
           "TITANGRADE_LTI_TOOL_URL": "https://grader.example.edu"}
    add = ["lti", "platforms", "add", "--name", "Moodle", "--issuer", "https://moodle.example.edu", "--client-id",
           "abc", "--auth-login-url", "https://moodle.example.edu/mod/lti/auth.php", "--auth-token-url",
           "https://moodle.example.edu/mod/lti/token.php", "--keyset-url", "https://moodle.example.edu/mod/lti/certs.php",
           "--deployment-id", "1", "--deployment-id", "2"]
    made = cli(*add, env=env)
    assert made.returncode == 0 and "platform 1: Moodle" in made.stdout, made.stderr
    assert cli(*add, env=env).returncode != 0
    assert "deployments 1,2" in cli("lti", "platforms", "list", env=env).stdout
    assert cli("lti", "platforms", "remove", "1", env=env).returncode == 0
    assert "Moodle" not in cli("lti", "platforms", "list", env=env).stdout
    assert cli("lti", "platforms", "remove", "7", env=env).returncode != 0
    assert cli("lti", "keys", "rotate", env=env).returncode == 0
    assert "holds 2 key(s)" in cli("lti", "keys", "rotate", env=env).stdout
    assert len(cli("lti", "keys", "list", env=env).stdout.splitlines()) == 2
    assert "https://grader.example.edu/lti/jwks" in cli("lti", "config", env=env).stdout


def test_0005_up_and_down(db_engine):
    from service.db import _alembic_config, current_revision

    cfg = _alembic_config(db_engine)
    assert {"lti_platforms", "lti_login_states", "lti_contexts", "lti_line_items"} <= set(
        inspect(db_engine).get_table_names())
    command.downgrade(cfg, "0004")
    assert not {"lti_platforms", "lti_line_items"} & set(inspect(db_engine).get_table_names())
    command.upgrade(cfg, "head")
    assert "lti_line_items" in inspect(db_engine).get_table_names() and current_revision(db_engine)


def test_0009_up_and_down(db_engine):
    from service.db import _alembic_config

    cfg = _alembic_config(db_engine)
    columns = lambda: {c["name"] for c in inspect(db_engine).get_columns("lti_login_states")}  # noqa: E731
    assert "browser_hash" in columns()
    command.downgrade(cfg, "0008")
    assert "browser_hash" not in columns() and "nonce" in columns()
    command.upgrade(cfg, "head")
    assert "browser_hash" in columns()


def test_a_platform_issuer_longer_than_an_identitys_is_refused_at_registration(lti, svc):
    """Launch identities are (platform issuer, sub) and identities.issuer holds 200 characters: a platform
    registered with a longer issuer (the API took 500) made every launch of it a 500 on PostgreSQL."""
    body = {**lti.platform.registration("long"), "client_id": "client-long",
            "issuer": "https://lms.example/" + "i" * 200}
    resp = httpx.post(lti.url + "/api/v1/lti/platforms", json=body, headers=svc.auth(lti.tokens["root"]), timeout=30)
    assert resp.status_code == 422 and "200" in resp.json()["error"]["message"], resp.text
    assert resp.json()["error"]["code"] == "invalid_platform"

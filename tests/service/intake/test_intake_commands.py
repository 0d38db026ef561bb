"""`titangrade intake ...`: the signed-intake integrations of a course, against a real database."""

from __future__ import annotations

import shutil

from cli_support import cli


def test_intake_commands(sqlite_template, tmp_path):
    db = tmp_path / "cli.db"
    shutil.copyfile(sqlite_template, db)
    url = f"sqlite:///{db}"
    intake = cli("intake", "add", "--course", "c1", "--name", "gitea", "--issuer", "https://git.example", db_url=url)
    assert intake.returncode == 0 and "integration=gitea" in intake.stdout and "whsec_" in intake.stdout
    assert "gitea" in cli("intake", "list", db_url=url).stdout
    again = cli("intake", "add", "--course", "c1", "--name", "gitea", "--issuer", "x", db_url=url)
    assert again.returncode != 0 and "already has an intake integration" in again.stderr
    own = cli("intake", "add", "--course", "c1", "--name", "forge", db_url=url)  # no --issuer: its own namespace
    assert own.returncode == 0 and "issuer intake:c1:forge" in own.stdout
    assert cli("intake", "confirm-issuer", "1", db_url=url).returncode == 0
    assert cli("intake", "rotate", "1", db_url=url).returncode == 0
    assert cli("intake", "remove", "1", db_url=url).returncode == 0
    assert "gitea" not in cli("intake", "list", db_url=url).stdout

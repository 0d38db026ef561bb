"""`titangrade submissions notebook ID -o FILE` over real HTTP: the file is byte for byte the upload; someone
else's submission is refused in words, with nothing written."""

from __future__ import annotations

import httpx
from cli_support import cli


def _upload(live_api, svc, who: str, raw: bytes) -> str:
    resp = httpx.post(
        f"{live_api.url}/api/v1/submissions",
        files={"notebook": ("a.ipynb", raw)},
        headers=svc.auth(live_api.tokens[who]),
    )
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def test_the_cli_downloads_the_upload_byte_for_byte(live_api, svc, tmp_path, module_db_url):
    raw = svc.notebook().replace(b'\n "metadata"', b'\r\n\t"metadata"') + b"  \n"
    sid = _upload(live_api, svc, "alice", raw)
    out = tmp_path / "mine.ipynb"
    done = cli(
        "submissions",
        "notebook",
        sid,
        "-o",
        str(out),
        "--url",
        live_api.url,
        "--token",
        live_api.tokens["teacher"],
        db_url=module_db_url,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == raw and f"wrote {out}" in done.stderr


def test_the_cli_refuses_someone_elses_submission_in_words(live_api, svc, tmp_path, module_db_url):
    sid = _upload(live_api, svc, "alice", svc.notebook())
    out = tmp_path / "theirs.ipynb"
    done = cli(
        "submissions",
        "notebook",
        sid,
        "-o",
        str(out),
        "--url",
        live_api.url,
        "--token",
        live_api.tokens["bob"],
        db_url=module_db_url,
    )
    assert done.returncode == 1 and "404 not_found" in done.stderr and not out.exists()

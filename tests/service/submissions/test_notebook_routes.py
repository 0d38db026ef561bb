"""The submitted notebook over HTTP with a real database: the API download is byte for byte the upload and
follows GET /submissions/{id}'s access rules; the pages show it escaped and compare two attempts."""

from __future__ import annotations

import json
import re

import pytest

URL = "/api/v1/submissions"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SCRIPT = "<script>window.__xss=1</script>"


def _odd_bytes() -> bytes:
    """A valid notebook as no serializer writes it: keys out of order, tabs, CRLF, trailing blanks, non-ASCII
    unescaped, `\\u` escapes elsewhere. A download that re-serialised it would differ."""
    return (
        '{"nbformat_minor":5,\r\n\t"metadata" : {"titangrade": {"exercise_id": "ch05.svc_sum"}, "kernelspec":'
        ' {"name": "python3", "display_name": "Python 3", "language": "python"}},   \r\n'
        '"nbformat": 4, "cells": [\n'
        '  {"source": ["total = 2 + 3  # \u00e9t\u00e9 \\u00e9"], "outputs": [], "metadata": {}, "id": "a1",'
        ' "execution_count": null, "cell_type": "code"},\n'
        '  {"id": "b2", "cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null,'
        ' "source": "word = \'crane\'"}\n'
        "]}   \n\n"
    ).encode()


def _hostile(svc) -> bytes:
    nb = json.loads(svc.notebook())
    nb["cells"].insert(0, {"cell_type": "markdown", "id": "md0", "metadata": {}, "source": f"# Hi {SCRIPT}"})
    nb["cells"][1]["source"] = f"total = 2 + 3  # {SCRIPT}"
    nb["cells"][1]["outputs"] = [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": [SCRIPT, '<img src=x onerror="1">']}},
        {"output_type": "stream", "name": "stdout", "text": "Q" * 200_000},
    ]
    return json.dumps(nb).encode()


def _post(api, svc, who: str, raw: bytes) -> str:
    resp = api.post(
        URL, files={"notebook": ("nb.ipynb", raw, "application/x-ipynb+json")}, headers=svc.auth(api.tokens[who])
    )
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def _sign_in(api, who: str) -> None:
    api.cookies.clear()
    page = api.get("/login")
    resp = api.post(
        "/login", data={"token": api.tokens[who], "csrf": CSRF.search(page.text).group(1)}, follow_redirects=False
    )
    assert resp.status_code == 303 and resp.headers["location"] == "/exercises", resp.text


def test_the_download_is_byte_for_byte_the_upload(api, svc):
    raw = _odd_bytes()
    sid = _post(api, svc, "alice", raw)
    resp = api.get(f"{URL}/{sid}/notebook", headers=svc.auth(api.tokens["alice"]))
    assert resp.status_code == 200
    assert resp.content == raw
    assert resp.headers["content-type"] == "application/x-ipynb+json"
    assert resp.headers["content-disposition"] == 'attachment; filename="ch05.svc_sum-attempt1.ipynb"'
    assert "no-store" in resp.headers["cache-control"]


def test_only_the_owner_and_the_course_staff_may_download(api, svc):
    raw = _odd_bytes()
    sid = _post(api, svc, "alice", raw)
    path = f"{URL}/{sid}/notebook"
    for who in ("teacher", "root"):  # the course's instructor, an admin
        assert api.get(path, headers=svc.auth(api.tokens[who])).content == raw, who
    for who in ("bob", "carol"):  # another learner of the course, a learner of another course
        resp = api.get(path, headers=svc.auth(api.tokens[who]))
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found", who
        missing = api.get(f"{URL}/{'0' * 32}/notebook", headers=svc.auth(api.tokens[who]))
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")  # as if missing
        assert raw.decode() not in resp.text
    assert api.get(path).status_code == 401


def test_the_download_is_in_the_openapi_document(api):
    doc = api.get("/api/v1/openapi.json").json()
    op = doc["paths"]["/api/v1/submissions/{submission_id}/notebook"]["get"]
    assert set(op["responses"]["200"]["content"]) == {"application/x-ipynb+json"}
    assert {"404", "401", "503"} <= set(op["responses"])
    links = doc["paths"]["/api/v1/submissions"]["post"]["responses"]["202"]["links"]
    assert links["DownloadNotebook"]["operationId"] == op["operationId"]


def test_the_page_shows_a_hostile_notebook_escaped_and_capped(api, svc):
    from sqlalchemy import update

    from service.db import transaction
    from service.submissions.models import Submission

    sid = _post(api, svc, "alice", _hostile(svc))
    report = {"index": 0, "status": "error", "message": "NameError: <b>x</b>", "duration_s": 0.5}
    with transaction(api.app_state.sessions) as s:
        s.execute(update(Submission).where(Submission.id == sid).values(result={"cells": [report]}))
    for who in ("alice", "teacher"):
        _sign_in(api, who)
        for page in (f"/submissions/{sid}", f"/teach/submissions/{sid}"):
            if who == "alice" and page.startswith("/teach"):
                continue
            html = api.get(page).text
            notebook = html[html.index('<section id="notebook"') :]
            assert "<script>window" not in notebook and "<img src=x" not in notebook, (who, page)
            assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in notebook  # the source, as text
            assert "NameError: &lt;b&gt;x&lt;/b&gt;" in notebook and 'data-report="error"' in notebook
            assert "text/html" in notebook  # the rich output is named, not rendered
            assert "Q" * 4000 in notebook and "Q" * 4001 not in notebook  # the huge output, capped
            assert f'href="/submissions/{sid}/notebook"' in notebook
    _sign_in(api, "alice")
    assert api.get(f"/submissions/{sid}/notebook").content == _hostile(svc)
    _sign_in(api, "bob")
    assert api.get(f"/submissions/{sid}").status_code == 404
    assert api.get(f"/submissions/{sid}/notebook").status_code == 404


def test_the_page_shows_the_outputs_the_grader_saw_escaped_and_says_when_none_were_recorded(api, svc):
    from sqlalchemy import update

    from service.db import transaction
    from service.submissions.models import Submission

    sid = _post(api, svc, "alice", svc.notebook())
    graded = {"index": 0, "status": "ok", "outputs": [{"kind": "stdout", "text": f"total {SCRIPT}"},
                                                      {"kind": "display", "text": "", "mimes": ["text/html"]}]}
    older = {"index": 1, "status": "ok"}  # stored before outputs were recorded
    with transaction(api.app_state.sessions) as s:
        s.execute(update(Submission).where(Submission.id == sid).values(result={"cells": [graded, older]}))
    for who, page in (("alice", f"/submissions/{sid}"), ("teacher", f"/teach/submissions/{sid}")):
        _sign_in(api, who)
        html = api.get(page).text
        notebook = html[html.index('<section id="notebook"') :]
        first, second = notebook.split('<article class="nb-cell"')[1:3]
        assert "Output when graded" in first and f"total {SCRIPT}".replace("<", "&lt;").replace(">", "&gt;") in first
        assert "<script>window" not in notebook and "Output not kept (text/html)" in first
        assert "Not recorded for this attempt." in second and 'data-recorded="no"' in second
    api.get("/lang/zh", follow_redirects=False)
    html = api.get(f"/teach/submissions/{sid}").text
    assert "评分时的输出" in html and "此次提交未记录评分时的输出。" in html


def _edited(svc) -> bytes:
    nb = json.loads(svc.notebook())
    nb["cells"][0]["source"] = "total = 2 + 2\nprint(total)"
    return json.dumps(nb).encode()


def test_two_attempts_compared_cell_by_cell_for_the_owner_and_staff_only(api, svc):
    first = _post(api, svc, "alice", _edited(svc))
    second = _post(api, svc, "alice", svc.notebook())
    bobs = _post(api, svc, "bob", svc.notebook())
    _sign_in(api, "alice")
    page = api.get(f"/submissions/{second}").text
    assert f'<option value="{first}">#1' in page and bobs not in page  # the form offers her other attempt
    for who in ("alice", "teacher"):
        _sign_in(api, who)
        resp = api.get(f"/submissions/{second}/compare", params={"other": first})
        assert resp.status_code == 200, (who, resp.text)
        assert 'data-change="changed"' in resp.text and 'data-change="same"' in resp.text
        assert "<del>- total = 2 + 2</del>" in resp.text and "<ins>+ total = 2 + 3</ins>" in resp.text
        assert "1 changed, 0 added, 0 removed, 1 unchanged" in resp.text
    _sign_in(api, "alice")  # someone else's attempt is not hers to compare with: a 404, as if missing
    assert api.get(f"/submissions/{second}/compare", params={"other": bobs}).status_code == 404
    _sign_in(api, "teacher")  # two learners' notebooks are not two attempts
    assert api.get(f"/submissions/{second}/compare", params={"other": bobs}).status_code == 404
    _sign_in(api, "bob")
    assert api.get(f"/submissions/{bobs}/compare", params={"other": first}).status_code == 404


@pytest.mark.parametrize("lang", ["zh"])
def test_the_notebook_section_speaks_the_page_language(api, svc, lang):
    sid = _post(api, svc, "alice", svc.notebook())
    _sign_in(api, "alice")
    api.get(f"/lang/{lang}", follow_redirects=False)
    html = api.get(f"/submissions/{sid}").text
    assert "提交的笔记本" in html and "下载提交的 .ipynb 文件" in html

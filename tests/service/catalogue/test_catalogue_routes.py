"""The catalogue API (service/catalogue/): exercise views, the learner template, bulk regrade's answer."""
from __future__ import annotations


def _error(resp, status, code):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"]["code"] == code, body
    assert len(body["error"]["message"]) > 10
    return body["error"]["message"]


def _submit(api, svc, token="alice"):
    files = {"notebook": ("a.ipynb", svc.notebook())}
    resp = api.post("/api/v1/submissions", files=files, headers=svc.auth(api.tokens[token]))
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def test_exercise_endpoints_serve_templates_not_references(api, svc):
    headers = svc.auth(api.tokens["alice"])
    listed = api.get("/api/v1/exercises", headers=headers).json()
    assert {e["id"] for e in listed} == {"ch05.svc_sum", "ch05.svc_long", "ch05.svc_gpu", "ch05.svc_broken"}
    one = api.get("/api/v1/exercises/ch05.svc_sum", headers=headers).json()
    assert one["max_score"] == 3.0 and one["resources"]["devices"] == 0 and one["limits"]["run_timeout_s"] == 60
    nb = api.get("/api/v1/exercises/ch05.svc_sum/notebook", headers=headers)
    assert nb.status_code == 200 and "total = None" in nb.text and "total = 2 + 3" not in nb.text
    _error(api.get("/api/v1/exercises/ch05.nope/notebook", headers=headers), 404, "unknown_exercise")
    _error(api.get("/api/v1/nothing-here", headers=headers), 404, "not_found")


def test_bulk_regrade_says_why_nothing_was_queued(api, svc):
    _submit(api, svc)
    teacher = svc.auth(api.tokens["teacher"])
    resp = api.post("/api/v1/exercises/ch05.svc_sum/regrade", headers=teacher).json()
    assert resp["queued"] == 0 and resp["skipped"][0]["reason"] == "already_pending" and "skipped" in resp["message"]
    empty = api.post("/api/v1/exercises/ch05.svc_long/regrade", headers=teacher).json()
    assert empty["queued"] == 0 and "nothing to regrade" in empty["message"]

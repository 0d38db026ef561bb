"""The learner's API view of a score an instructor set: `override` has the score, reason, who and when (RFC
3339); it goes when the override is cleared. Both databases."""

from __future__ import annotations


def test_the_learner_sees_the_instructors_score_with_its_reason(api, svc):
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    sid = api.post("/api/v1/submissions", files=files, headers=svc.auth(api.tokens["alice"])).json()["id"]
    mine = svc.auth(api.tokens["alice"])
    assert api.get(f"/api/v1/submissions/{sid}", headers=mine).json()["override"] is None
    set_ = api.post(
        f"/api/v1/submissions/{sid}/override",
        json={"score": 2.5, "reason": "partial credit for <b>check 2</b>"},
        headers=svc.auth(api.tokens["teacher"]),
    )
    assert set_.status_code == 200 and set_.json()["override"]["score"] == 2.5
    body = api.get(f"/api/v1/submissions/{sid}", headers=mine).json()
    shown = body["override"]
    assert body["score"] == 2.5 and shown["reason"] == "partial credit for <b>check 2</b>" and shown["by"] == "teacher"
    assert shown["at"].endswith("+00:00") and "T" in shown["at"]
    listed = api.get("/api/v1/submissions", headers=mine).json()["items"]
    assert [s["override"]["reason"] for s in listed if s["id"] == sid] == ["partial credit for <b>check 2</b>"]
    api.post(
        f"/api/v1/submissions/{sid}/override",
        json={"score": 1.0, "reason": "second look"},
        headers=svc.auth(api.tokens["teacher"]),
    )
    assert api.get(f"/api/v1/submissions/{sid}", headers=mine).json()["override"]["reason"] == "second look"
    api.post(
        f"/api/v1/submissions/{sid}/override",
        json={"score": None, "reason": "back to the auto score"},
        headers=svc.auth(api.tokens["teacher"]),
    )
    cleared = api.get(f"/api/v1/submissions/{sid}", headers=mine).json()
    assert cleared["override"] is None and cleared["manual_score"] is None

"""The gradebook page's `late` filter: learners with a shown cell counted late, or with none late; the
exercise filter narrows which cells count; an unknown value shows everyone; links keep the filter."""

from __future__ import annotations

from service.courses.gradebook import Gradebook, Learner
from service.courses.matrix import href, parse_view, select_page

EXERCISES = [("ex.a", 10.0), ("ex.b", 10.0)]


def _learner(user: str, *, late_a: bool, late_b: bool) -> Learner:
    learner = Learner(issuer="titangrade", subject=user, user=user)
    for ex_id, late in (("ex.a", late_a), ("ex.b", late_b)):
        learner.cells[ex_id] = {"exercise_id": ex_id, "score": 5.0, "max_score": 10.0, "status": "graded", "late": late}
    return learner


BOOK = Gradebook(
    course="c",
    policy="best",
    exercises=EXERCISES,
    learners=[_learner("ann", late_a=True, late_b=False), _learner("bo", late_a=False, late_b=True),
              _learner("cy", late_a=False, late_b=False)],
)


def _names(**query) -> list[str]:
    args = {"sort": "user", "direction": "", "q": "", "exercise": "", "status": "", "page": "1", "per_page": "",
            **query}
    return [p.user for p in select_page(BOOK, parse_view(BOOK, **args)).learners]


def test_the_late_filter_keeps_learners_with_a_late_shown_cell_or_none():
    assert _names(late="late") == ["ann", "bo"]
    assert _names(late="on_time") == ["cy"]
    assert _names(late="late", exercise="ex.b") == ["bo"]
    assert _names(late="on_time", exercise="ex.b") == ["ann", "cy"]
    assert _names(late="sometimes") == ["ann", "bo", "cy"]


def test_links_keep_the_late_filter():
    view = parse_view(BOOK, sort="user", direction="", q="", exercise="", status="", page="1", per_page="", late="late")
    assert href("/g", policy="best", view=view, over={"page": 2}) == "/g?policy=best&late=late&page=2"

"""The gradebook page's rules without a browser or a database: sort on any column either way (ties by name),
search, the exercise and status filters, pagination, and query strings that never break the page."""

from __future__ import annotations

import pytest

from service.courses.gradebook import Gradebook, Learner
from service.courses.matrix import View, href, parse_view, select_page

EXERCISES = [("ex.a", 10.0), ("ex.b", 10.0)]


def _learner(user: str, a: float | None, b: float | None, *, a_status: str = "graded") -> Learner:
    learner = Learner(issuer="titangrade", subject=user.lower(), user=user)
    for ex_id, score, status in (("ex.a", a, a_status), ("ex.b", b, "graded")):
        state = status if score is not None or status != "graded" else "missing"
        learner.cells[ex_id] = {"exercise_id": ex_id, "score": score, "max_score": 10.0, "status": state}
        learner.points += score or 0.0
        learner.max_points += 10.0
    return learner


@pytest.fixture
def book() -> Gradebook:
    learners = [
        _learner("Dora", 9.0, None),
        _learner("ann", 5.0, 5.0),
        _learner("Cy", None, 2.0, a_status="not_gradable"),
        _learner("bo", 1.0, 10.0),
        _learner("Eve", 5.0, 5.0),
    ]
    return Gradebook(course="c", policy="best", exercises=EXERCISES, learners=learners)


def _names(book, **view) -> list[str]:
    return [p.user for p in select_page(book, View(**view)).learners]


def test_sort_on_every_column_either_way(book):
    assert _names(book) == ["ann", "bo", "Cy", "Dora", "Eve"]  # by name, any case
    assert _names(book, desc=True) == ["Eve", "Dora", "Cy", "bo", "ann"]
    assert _names(book, sort="total", desc=True) == ["bo", "ann", "Eve", "Dora", "Cy"]  # ties keep name order
    assert _names(book, sort="total") == ["Cy", "Dora", "ann", "Eve", "bo"]
    assert _names(book, sort="percent", desc=True)[0] == "bo"
    assert _names(book, sort="ex.a") == ["Cy", "bo", "ann", "Eve", "Dora"]  # no score sorts below 0
    assert _names(book, sort="ex.b", desc=True) == ["bo", "ann", "Eve", "Cy", "Dora"]


def test_search_and_filters(book):
    assert _names(book, q="dO") == ["Dora"]  # name or subject, any case
    assert _names(book, status="missing") == ["Dora"]
    assert _names(book, status="not_gradable") == ["Cy"]
    only_b = select_page(book, View(exercise="ex.b", status="missing"))
    assert only_b.exercises == [("ex.b", 10.0)] and [p.user for p in only_b.learners] == ["Dora"]
    assert _names(book, exercise="ex.a", status="missing") == []  # Dora's missing work is in ex.b
    assert select_page(book, View(q="nobody")).first == 0


def test_pagination(book):
    pages = [select_page(book, View(per_page=2, page=n)) for n in (1, 2, 3, 9)]
    assert [[p.user for p in page.learners] for page in pages] == [["ann", "bo"], ["Cy", "Dora"], ["Eve"], ["Eve"]]
    assert (pages[1].first, pages[1].last, pages[1].pages, pages[1].matched) == (3, 4, 3, 5)
    assert pages[3].page == 3  # past the end: the last page


def test_query_strings_never_break_the_page(book):
    odd = parse_view(
        book,
        sort="ex.zz",
        direction="sideways",
        q="x" * 999,
        exercise="nope",
        status="bad",
        page="-3",
        per_page="100000",
    )
    assert (odd.sort, odd.desc, len(odd.q), odd.exercise, odd.status, odd.page, odd.per_page) == (
        "user",
        False,
        200,
        "",
        "",
        1,
        200,
    )
    fine = parse_view(
        book, sort="ex.b", direction="desc", q="an", exercise="ex.a", status="missing", page="2", per_page=""
    )
    assert (fine.sort, fine.desc, fine.exercise, fine.status, fine.page, fine.per_page) == (
        "ex.b",
        True,
        "ex.a",
        "missing",
        2,
        50,
    )
    old = parse_view(book, sort="score", direction="", q="", exercise="", status="", page="", per_page="")
    assert (old.sort, old.desc) == ("total", True)  # the flat list's old link still works: highest first


def test_links_keep_the_view_and_drop_defaults():
    view = View(sort="ex.a", desc=True, q="a&b", status="missing", page=3)
    link = href("/g", policy="best", view=view, over={"page": 1})
    assert link == "/g?policy=best&sort=ex.a&dir=desc&q=a%26b&status=missing"
    assert href("/g", policy="", view=View(), over={}) == "/g"
    assert href("/g", policy="best", view=View(), over={"policy": "latest"}) == "/g?policy=latest"

"""One page of the gradebook matrix: learners filtered, sorted on any column, either way, and paginated.

Pure functions over a built `Gradebook` (service/courses/gradebook.py), so the page renders 50 learners,
not 5,000 rows, and the sort and filter rules are tested without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from service.courses.gradebook import CellStatus, Gradebook, Learner
from service.states import SubmissionStatus

PER_PAGE = 50
MAX_PER_PAGE = 200
FIXED_SORTS = ("user", "total", "percent")  # and any exercise id: that column's score
STATUSES: tuple[str, ...] = (CellStatus.MISSING, *SubmissionStatus)
LATE_FILTERS = ("late", "on_time")  # learners with a shown cell counted late / with no shown cell late


@dataclass(slots=True, kw_only=True)
class View:
    """What the page asked for, already made safe: unknown values fall back to the defaults."""

    sort: str = "user"
    desc: bool = False
    q: str = ""  # part of a learner's name or subject, any case
    exercise: str = ""  # one exercise id: only its column, and `status` looks at it alone
    status: str = ""  # learners with at least one shown cell in this state
    late: str = ""  # one of LATE_FILTERS
    page: int = 1
    per_page: int = PER_PAGE


@dataclass(slots=True, kw_only=True)
class Page:
    learners: list[Learner]
    exercises: list[tuple[str, float]]  # the columns shown
    matched: int  # learners after the filters
    page: int
    pages: int
    first: int  # 1-based index of the first learner shown (0 when none)
    last: int


def parse_view(
    book: Gradebook,
    *,
    sort: str,
    direction: str,
    q: str,
    exercise: str,
    status: str,
    page: str,
    per_page: str,
    late: str = "",
) -> View:
    """A View from the query string: a page is never refused for a bad parameter, it shows the default."""
    ids = {ex_id for ex_id, _ in book.exercises}
    if sort == "score":  # the flat list's old link: highest first
        sort, direction = "total", direction or "desc"
    return View(
        sort=sort if sort in FIXED_SORTS or sort in ids else "user",
        desc=direction == "desc",
        q=q.strip()[:200],
        exercise=exercise if exercise in ids else "",
        status=status if status in STATUSES else "",
        late=late if late in LATE_FILTERS else "",
        page=_positive(page, 1),
        per_page=min(_positive(per_page, PER_PAGE), MAX_PER_PAGE),
    )


def _positive(text: str, default: int) -> int:
    return int(text) if text.isdigit() and 0 < int(text) < 10**6 else default


def _sort_key(sort: str):
    if sort == "user":
        return lambda p: (p.user.casefold(), p.issuer, p.subject)
    if sort == "total":
        return lambda p: p.points
    if sort == "percent":
        return lambda p: -1.0 if p.percent is None else p.percent
    # an exercise column: no score (missing, queued, not gradable) sorts below every score
    return lambda p: (p.cells[sort]["score"] is not None, p.cells[sort]["score"] or 0.0)


def _late_matches(wanted: str, late_cells: list[bool]) -> bool:
    if wanted == "late":
        return any(late_cells)
    if wanted == "on_time":
        return not any(late_cells)
    return True


def select_page(book: Gradebook, view: View) -> Page:
    columns = [(ex_id, m) for ex_id, m in book.exercises if not view.exercise or ex_id == view.exercise]
    shown = [ex_id for ex_id, _ in columns]
    needle = view.q.casefold()
    learners = [
        p
        for p in book.learners
        if (not needle or needle in p.user.casefold() or needle in p.subject.casefold())
        and (not view.status or any(p.cells[ex_id]["status"] == view.status for ex_id in shown))
        and _late_matches(view.late, [bool(p.cells[ex_id].get("late")) for ex_id in shown])
    ]
    learners.sort(key=_sort_key("user"))  # the tie order, kept by the stable sort below in both directions
    if view.sort != "user":
        learners.sort(key=_sort_key(view.sort), reverse=view.desc)
    elif view.desc:
        learners.reverse()
    pages = max(1, math.ceil(len(learners) / view.per_page))
    page = min(view.page, pages)
    start = (page - 1) * view.per_page
    chunk = learners[start : start + view.per_page]
    return Page(
        learners=chunk,
        exercises=columns,
        matched=len(learners),
        page=page,
        pages=pages,
        first=start + 1 if chunk else 0,
        last=start + len(chunk),
    )


def href(base: str, *, policy: str, view: View, over: Mapping[str, object]) -> str:
    """`base` with the page's query string, `over` replacing some of it (`policy`, `sort`, `dir`, `page`, ...);
    defaults left out."""
    params: dict[str, object] = {
        "policy": policy,
        "sort": view.sort,
        "dir": "desc" if view.desc else "asc",
        "q": view.q,
        "exercise": view.exercise,
        "status": view.status,
        "late": view.late,
        "page": view.page,
        "per_page": view.per_page,
    }
    params.update(over)
    defaults = {"sort": "user", "dir": "asc", "page": 1, "per_page": PER_PAGE}
    kept = {k: v for k, v in params.items() if v not in ("", None) and defaults.get(k) != v}
    return f"{base}?{urlencode(kept)}" if kept else base

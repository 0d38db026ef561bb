"""Progress events from the engine: typed (grading/progress.py), cell events are throttled (burst, then a
rate), others always pass; each kind reads back from its stored row as itself."""

import pytest

from grading.pipeline import _emitter
from grading.progress import Cell, Checks, Claimed, Done, Other, Placed, Restart, Started, from_row, kind_of


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_cell_events_pass_a_token_bucket_and_other_events_always_pass():
    got: list = []
    clock = Clock()
    emit = _emitter(got.append, clock=clock, burst=5, per_s=2.0)
    emit(Started(exercise_id="x"))
    for i in range(50):  # 50 cells in the same instant: only the burst goes out
        emit(Cell(index=i, total=60))
    assert [e.index for e in got if isinstance(e, Cell)] == [0, 1, 2, 3, 4]
    clock.now = 1.0  # one second later: two more tokens
    for i in range(50, 60):
        emit(Cell(index=i, total=60))
    emit(Checks())
    emit(Done(status="graded", score=1.0, max_score=1.0))
    assert [e.index for e in got if isinstance(e, Cell)] == [0, 1, 2, 3, 4, 50, 51]
    assert [e.kind for e in got if not isinstance(e, Cell)] == ["started", "checks", "done"]


def test_slow_cells_are_all_reported():
    got: list = []
    clock = Clock()
    emit = _emitter(got.append, clock=clock, burst=2, per_s=2.0)
    for i in range(30):
        clock.now += 0.5
        emit(Cell(index=i, total=30))
    assert len(got) == 30


def test_events_serialise_to_the_streams_json():
    assert Cell(index=2, total=9).to_json() == {"event": "cell", "index": 2, "total": 9}
    assert Checks().to_json() == {"event": "checks"}
    assert Restart(skipped=None).to_json() == {"event": "restart", "skipped": None}
    assert Placed(node="n1", device_kind="npu", device_ids=(0, 1)).data() == {
        "node": "n1",
        "device_kind": "npu",
        "device_ids": [0, 1],
    }
    graded = Done(status="graded", score=0.0, max_score=3.0)
    assert graded.to_json() == {"event": "done", "status": "graded", "score": 0.0, "max_score": 3.0}
    superseded = Done(status="superseded", score=None, superseded_by="abc")
    assert superseded.data() == {"status": "superseded", "score": None, "superseded_by": "abc"}


@pytest.mark.parametrize(
    "event",
    [
        Started(exercise_id="ch07.wordle_reward"),
        Cell(index=0, total=1),
        Claimed(worker="w1", attempt=2),
        Placed(node="n", device_kind="cpu"),
        Done(status="superseded", score=None, superseded_by="abc"),
    ],
)
def test_a_stored_row_reads_back_as_its_typed_event(event):
    back = from_row(kind_of(event), event.data())
    assert type(back) is type(event) and back.to_json() == event.to_json()


@pytest.mark.parametrize(
    "kind,data",
    [
        ("claimed", {}),  # fields missing: an older writer
        ("cell", {"index": 0, "total": 2, "elapsed_s": 1.5}),  # a field this code does not know
        ("done", {"status": "graded", "score": 1.0, "max_score": None}),  # a None stored, not left out
        ("compiled", {"what": "x"}),  # a kind this code does not know
    ],
)
def test_a_row_that_is_not_a_known_shape_passes_through_unchanged(kind, data):
    back = from_row(kind, data)
    assert isinstance(back, Other) and kind_of(back) == kind and back.to_json() == {"event": kind, **data}

"""Progress events from the engine: cell events are throttled (burst, then a rate), others always pass."""
from grading.pipeline import _emitter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_cell_events_pass_a_token_bucket_and_other_events_always_pass():
    got: list[dict] = []
    clock = Clock()
    emit = _emitter(got.append, clock=clock, burst=5, per_s=2.0)
    emit({"event": "started"})
    for i in range(50):  # 50 cells in the same instant: only the burst goes out
        emit({"event": "cell", "index": i})
    assert [e["index"] for e in got if e["event"] == "cell"] == [0, 1, 2, 3, 4]
    clock.now = 1.0  # one second later: two more tokens
    for i in range(50, 60):
        emit({"event": "cell", "index": i})
    emit({"event": "checks"})
    emit({"event": "done"})
    assert [e["index"] for e in got if e["event"] == "cell"] == [0, 1, 2, 3, 4, 50, 51]
    assert [e["event"] for e in got if e["event"] != "cell"] == ["started", "checks", "done"]


def test_slow_cells_are_all_reported():
    got: list[dict] = []
    clock = Clock()
    emit = _emitter(got.append, clock=clock, burst=2, per_s=2.0)
    for i in range(30):
        clock.now += 0.5
        emit({"event": "cell", "index": i})
    assert len(got) == 30

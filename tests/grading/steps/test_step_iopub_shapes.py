"""Iopub message shapes (fuzzed) and the bounded reader, without a kernel: whatever a kernel sends, output
handling either keeps it within budget or rejects it as Malformed, and reading never holds more than
its caps."""
from __future__ import annotations

import json

import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.sandbox.channels import FRAME_CHARGE, SEND_TIMEOUT_MS, SND_HWM, bounded_socket, recv_bounded
from grading.steps.limit_output import Malformed, OutputCollector, output_size

KINDS = [*OutputCollector.KINDS, "comm_msg", "execute_input"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=8)
likely_keys = st.sampled_from(["name", "text", "data", "metadata", "transient", "ename", "evalue", "traceback",
                               "execution_count", "wait", "display_id"])
contents = st.dictionaries(likely_keys | st.text(max_size=8), json_values | st.fixed_dictionaries(
    {"display_id": json_values}), max_size=6)


@pytest.mark.slow  # ~5 s on a quiet machine, 25 s on a busy one
@settings(max_examples=150, deadline=None)
@given(messages=st.lists(st.tuples(st.sampled_from(KINDS), contents), max_size=12), budget=st.integers(0, 400))
def test_any_message_shape_is_kept_within_budget_or_rejected(messages, budget):
    collector = OutputCollector(max_bytes=budget, marker="[cut]")
    for kind, content in messages:
        try:
            collector.add(kind, content)
        except Malformed:
            continue
    kept = [o for o in collector.outputs if o.get("text") != "[cut]"]
    assert sum(output_size(o) for o in kept) <= budget + 64 * len(kept)  # merged streams count their text
    json.dumps(collector.outputs)  # whatever was kept is plain JSON


@pytest.mark.parametrize("kind, content", [
    ("display_data", {"metadata": {}}),
    ("display_data", {"data": "text"}),
    ("execute_result", {"data": {}, "execution_count": "1"}),
    ("stream", {"name": "stdout", "text": 5}),
    ("error", {"ename": "E", "evalue": "", "traceback": None}),
    ("update_display_data", {"data": {}}),
    ("clear_output", {"wait": "yes"}),
])
def test_known_bad_shapes_are_malformed_not_crashes(kind, content):
    with pytest.raises(Malformed):
        OutputCollector(max_bytes=1000).add(kind, content)


def test_errors_and_tracebacks_count_against_the_budget():
    collector = OutputCollector(max_bytes=10_000, marker="[cut]")
    for _ in range(50):
        collector.add("error", {"ename": "E", "evalue": "", "traceback": ["x" * 1000]})
    assert collector.truncated and sum(output_size(o) for o in collector.outputs) < 11_000


def test_display_updates_and_clear_output_apply_within_the_cell():
    collector = OutputCollector(max_bytes=10_000)
    collector.add("display_data", {"data": {"text/plain": "1"}, "transient": {"display_id": "d"}})
    update = {"data": {"text/plain": "2"}, "metadata": {}, "transient": {"display_id": "d"}}
    collector.add("update_display_data", update)
    assert collector.outputs[0]["data"] == {"text/plain": "2"}
    collector.add("stream", {"name": "stdout", "text": "a"})
    collector.add("stream", {"name": "stdout", "text": "b"})
    assert collector.outputs[-1]["text"] == "ab"
    collector.add("clear_output", {"wait": True})
    collector.add("stream", {"name": "stdout", "text": "c"})
    assert collector.outputs == [{"output_type": "stream", "name": "stdout", "text": "c"}]


@pytest.fixture
def pair():
    ctx = zmq.Context()
    sender = ctx.socket(zmq.PAIR)
    port = sender.bind_to_random_port("tcp://127.0.0.1")
    receiver = bounded_socket(ctx, zmq.PAIR, f"tcp://127.0.0.1:{port}")
    yield sender, receiver
    sender.close(linger=0)
    receiver.close(linger=0)
    ctx.term()


def test_a_normal_message_is_read_whole_and_charged_per_frame(pair):
    sender, receiver = pair
    sender.send_multipart([b"a", b"bc"])
    assert receiver.poll(2000)
    got = recv_bounded(receiver)
    assert got.frames == [b"a", b"bc"] and got.charged == 3 + 2 * FRAME_CHARGE


def test_too_many_frames_are_counted_and_dropped(pair):
    sender, receiver = pair
    sender.send_multipart([b"x"] * 100 + [b"end"])
    assert receiver.poll(2000)
    got = recv_bounded(receiver, max_frames=64)
    assert got.oversized and not got.endless and got.charged == 103 + 101 * FRAME_CHARGE


def test_a_message_far_past_its_cap_is_abandoned_mid_message(pair):
    sender, receiver = pair
    sender.send_multipart([b"y" * 1000] * 3000)  # stands for one that never ends: reading stops at 2x the cap
    assert receiver.poll(2000)
    got = recv_bounded(receiver, max_bytes=100_000)
    assert got.endless and got.frames is None


@pytest.mark.timeout(30)
def test_a_kernel_gone_for_good_never_blocks_the_engine(tmp_path):
    import time

    from grading.steps.kernel_io import KernelIO

    urls = {name: f"ipc://{tmp_path}/{name}" for name in ("shell", "iopub", "control")}  # nobody listens
    io = KernelIO(urls=urls, key=b"key", is_alive=lambda: False)
    try:
        started = time.monotonic()
        run = io.execute("1", limit_s=5, collector=OutputCollector(max_bytes=100), store_history=False, iopub_s=1)
        assert run.status == "dead" and time.monotonic() - started < 3
        started = time.monotonic()
        for _ in range(SND_HWM + 2):  # past the send queue, a send gives up after SEND_TIMEOUT_MS
            io._interrupt_safely()
        assert time.monotonic() - started < 2 * SEND_TIMEOUT_MS / 1000 + 2
    finally:
        io.close()



FLOODER = """
import socket, struct, sys, zmq
shell = zmq.Context().socket(zmq.ROUTER)
shell_port = shell.bind_to_random_port("tcp://127.0.0.1")
srv = socket.create_server(("127.0.0.1", 0))
print(shell_port, srv.getsockname()[1], flush=True)
iopub, _ = srv.accept()  # the engine's SUB; ZMTP 3.0 by hand, as a learner may write to the wire
iopub.sendall(b"\\xff" + bytes(8) + b"\\x7f\\x03\\x00" + b"NULL".ljust(20, b"\\x00") + bytes(32))
ready = b"\\x05READY\\x0bSocket-Type" + struct.pack(">I", 3) + b"PUB"
iopub.sendall(bytes([0x04, len(ready)]) + ready)
shell.recv_multipart()  # the engine's execute_request: now frames flagged MORE, never a last one
frame = b"\\x03" + struct.pack(">Q", 65536) + b"z" * 65536
while True:
    iopub.sendall(frame)
"""


@pytest.mark.timeout(60)
def test_an_endless_message_is_stopped_by_hanging_up_past_the_memory_guard(monkeypatch):
    """libzmq shows no frame of an unfinished message, so only the memory guard sees it: past the guard
    the engine closes its sockets at once (freeing libzmq's queue) and reports the cell hung and flooded,
    even after an execute_reply, instead of reading on until a kill."""
    import subprocess
    import sys
    import threading
    import time

    from grading.sandbox.channels import MiB, rss_bytes
    from grading.steps import kernel_io

    monkeypatch.setattr(kernel_io, "RSS_GUARD_BYTES", 32 * MiB)
    kernel = subprocess.Popen([sys.executable, "-c", FLOODER], stdout=subprocess.PIPE, text=True)
    shell_port, iopub_port = kernel.stdout.readline().split()
    urls = {"shell": f"tcp://127.0.0.1:{shell_port}", "iopub": f"tcp://127.0.0.1:{iopub_port}",
            "control": f"tcp://127.0.0.1:{shell_port}"}
    io = kernel_io.KernelIO(urls=urls, key=b"key", is_alive=lambda: kernel.poll() is None)
    base = peak = rss_bytes()
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.wait(0.002):
            peak = max(peak, rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        run = io.execute("1", limit_s=20, collector=OutputCollector(max_bytes=100), store_history=False, iopub_s=1)
        grown_at_return = rss_bytes() - base
        time.sleep(0.3)  # the kernel still floods: a socket left open would keep queueing it
        assert rss_bytes() - base <= grown_at_return + 8 * MiB
    finally:
        done.set()
        sampler.join()
        kernel.kill()
        kernel.wait()
        io.close()
    assert run.flooded and run.status == "hung"
    assert io.broken and io.iopub.closed
    # The flood did reach the grader's memory (so the guard, not something else, stopped it), and the
    # hang-up kept it near the guard. No tighter lower bound: the guard frees the queue the moment it
    # trips, so on a loaded machine this 2 ms sampler can miss the crossing itself (CI saw 31 of 32 MB).
    assert 8 * MiB < peak - base < 32 * MiB + 48 * MiB, f"grew {(peak - base) / MiB:.0f} MB"


def test_read_message_checks_the_signature_and_leaves_dates_and_content_alone():
    from jupyter_client.session import Session

    from grading.sandbox.channels import read_message

    session = Session(key=b"k")
    msg = session.msg("stream", {"name": "stdout", "text": "hi"}, parent=session.msg("execute_request", {}))
    frames = session.serialize(msg, ident=[b"id"])
    got = read_message(session, frames)
    plain = session.deserialize(session.feed_identities(frames)[1], content=False)
    assert got["msg_type"] == plain["msg_type"] == "stream" and got["msg_id"] == plain["msg_id"]
    assert got["parent_header"]["msg_id"] == plain["parent_header"]["msg_id"]
    assert isinstance(got["header"]["date"], str) and got["content"] == plain["content"]  # packed, as before
    forged = list(frames)
    forged[-1] = b'{"name": "stdout", "text": "forged"}'  # content changed, signature kept
    unsigned = [*frames[:2], b"", *frames[3:]]
    for bad in (forged, unsigned, frames[:4]):
        with pytest.raises((ValueError, KeyError, TypeError)):
            read_message(session, bad)
    with pytest.raises(ValueError):
        read_message(Session(key=b"other"), frames)

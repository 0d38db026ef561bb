"""Limit recognition from kernel messages (pure functions; the live watcher is covered in test_sandbox_bwrap)."""
from __future__ import annotations

import pytest

from grading.sandbox.watch import classify_message, classify_text


@pytest.mark.parametrize("text, limit", [
    ("MemoryError: ", "memory limit"),
    ("RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 50000000000 bytes", "memory limit"),
    ("ImportError: libtriton.so: failed to map segment from shared object", "memory limit"),
    ("OSError: [Errno 27] File too large", "file size limit"),
    ("OSError: [Errno 28] No space left on device", "disk limit"),
    ("BlockingIOError: [Errno 11] Resource temporarily unavailable", "process limit"),
    ("RuntimeError: can't start new thread", "process limit"),
    ("sh: 0: Cannot fork", "process limit"),
])
def test_failure_messages_map_to_limits(text, limit):
    assert classify_text(text) == {limit}


def test_ordinary_output_is_no_limit():
    assert classify_text("loss 0.31 step 12; memory used 1.2 GB; resource usage fine") == set()
    assert classify_text("BlockingIOError on a non-blocking socket is handled") == set()


def test_error_messages_are_read_from_ename():
    msg = {"msg_type": "error", "content": {"ename": "MemoryError", "evalue": "", "traceback": []}}
    assert classify_message(msg) == {"memory limit"}
    assert classify_message({"msg_type": "status", "content": {"execution_state": "busy"}}) == set()


def test_a_flood_is_scanned_at_its_edges_only():
    flood = "y" * 10_000_000 + "\nOSError: [Errno 28] No space left on device\n"
    assert classify_message({"msg_type": "stream", "content": {"name": "stdout", "text": flood}}) == {"disk limit"}
    hidden_in_middle = "y" * 5_000_000 + "MemoryError" + "y" * 5_000_000
    assert classify_message({"msg_type": "stream", "content": {"text": hidden_in_middle}}) == set()

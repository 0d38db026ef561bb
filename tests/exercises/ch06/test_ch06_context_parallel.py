"""ch06.context_parallel: head arithmetic against COURSE.md section 4/5 and the exchange against real gloo collectives.

The reference all_to_all results are re-derived here with `dist.all_to_all` (the list API) on 2 spawned gloo ranks,
an implementation independent of the solution's `all_to_all_single`.
"""
from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from grading.exercise import Catalogue

REF = Catalogue().get("ch06.context_parallel").reference()["checks"]


def test_course_heads():
    calls = {tuple(c["args"]): c for c in REF["local_heads"]["calls"]}
    assert calls[(16, 8, 2)]["expect"] == [8, 4]
    assert calls[(16, 8, 16)]["raises"] == "ValueError"
    assert REF["valid_degrees"]["calls"][0]["expect"] == [1, 2, 4, 8]


def _worker(rank, port, shapes, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    results = []
    for B, S, H, D in shapes:
        full = torch.arange(B * S * H * D, dtype=torch.float32).reshape(B, S, H, D)
        local = full.chunk(2, dim=1)[rank]
        send = [c.contiguous() for c in local.chunk(2, dim=2)]  # head group j goes to rank j
        recv = [torch.empty_like(send[0]) for _ in range(2)]
        dist.all_to_all(recv, send)
        results.append(torch.cat(recv, dim=1))  # sequence slices in rank order
    torch.save(results, os.path.join(out, f"r{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.slow
def test_reference_exchange_matches_gloo_all_to_all(tmp_path):
    calls = REF["all_to_all_public"]["calls"] + REF["all_to_all_hidden"]["calls"]
    shapes = [s for c in calls for s in c["args"][0]]
    expects = [e for c in calls for e in c["expect"]]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(_worker, args=(port, shapes, str(tmp_path)), nprocs=2, start_method="spawn")
    for rank in range(2):
        got = torch.load(tmp_path / f"r{rank}.pt")
        for g, e in zip(got, expects):
            spec = e[f"rank{rank}"]["__tensor__"]
            assert list(g.shape) == spec["shape"] and g.tolist() == spec["data"]

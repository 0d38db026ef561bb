"""Which queued jobs a cluster can start now, and on which node: pure functions, no Ray import.

A queue row says only its lane, device count and world size (its *shape*). Each shape's demand comes
from the exercises that have it (CPUs per rank, the largest memory limit, the accelerator kinds they
accept), so the dispatcher can claim exactly the shapes some node can hold now and reserve the same
demand when it starts the job: a training job waits in the database queue, not inside Ray.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

Shape = tuple[str, int, int]  # (lane, devices, world_size), as on a job row
ACCELERATORS = ("npu", "cuda")  # device kinds a node may offer, in the order they are preferred
RAY_RESOURCE = {"npu": "NPU", "cuda": "GPU"}  # Ray's resource name per kind (NPU is Ray's native NPU resource)


@dataclass(frozen=True, slots=True, kw_only=True)
class Demand:
    """What one job takes on a node while it runs."""

    cpus: float
    memory_mb: int
    devices: int = 0
    kinds: tuple[str, ...] = ACCELERATORS  # accelerator kinds the exercise accepts (ignored when devices == 0)
    cpu_fallback: bool = False  # on a node with fewer than `devices` of every accepted kind: CPU ranks


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """What a node has free for our jobs (its totals minus what is reserved)."""

    node_id: str
    cpus: float
    memory_mb: int
    accelerators: Mapping[str, int]  # kind -> free count
    installed: Mapping[str, int] = field(default_factory=dict)  # kind -> what the node has, busy or not

    def fits(self, demand: Demand) -> str | None:
        """The device kind this node would grant ("cpu" for a CPU job or a fallback to CPU ranks), or None
        if it cannot hold the job now. A node that has the devices but not free waits for them."""
        if self.cpus + 1e-9 < demand.cpus or self.memory_mb < demand.memory_mb:
            return None
        if demand.devices == 0:
            return "cpu"
        kind = next((k for k in demand.kinds if self.accelerators.get(k, 0) >= demand.devices), None)
        if kind is None and demand.cpu_fallback and self.falls_back(demand):
            return "cpu"
        return kind

    def falls_back(self, demand: Demand) -> bool:
        """Too few of every accepted kind installed: the job runs on this node's CPU."""
        return all(max(self.installed.get(k, 0), self.accelerators.get(k, 0)) < demand.devices for k in demand.kinds)

    def minus(self, demand: Demand, kind: str) -> NodeView:
        acc = dict(self.accelerators)
        if kind != "cpu":  # a fallback job on the CPU takes no device
            acc[kind] -= demand.devices
        return replace(
            self, cpus=self.cpus - demand.cpus, memory_mb=self.memory_mb - demand.memory_mb, accelerators=acc
        )


def choose_node(nodes: Iterable[NodeView], demand: Demand) -> tuple[str, str] | None:
    """(node id, device kind) for `demand`, or None. CPU jobs prefer nodes without free accelerators (so
    accelerator nodes stay open for device jobs); device jobs take the tightest fit, and a job that falls
    back to CPU ranks takes free devices before a node without them; ties go to free CPUs."""
    best, best_key = None, None
    for node in nodes:
        kind = node.fits(demand)
        if kind is None:
            continue
        # a CPU job (a fallback one too) prefers nodes without free accelerators
        spare = sum(node.accelerators.values()) if kind == "cpu" else node.accelerators[kind] - demand.devices
        key = (int(demand.devices > 0 and kind == "cpu"), spare, -node.cpus, node.node_id)
        if best_key is None or key < best_key:
            best, best_key = (node.node_id, kind), key
    return best


def placeable_shapes(
    nodes: list[NodeView], demands: Mapping[Shape, Demand], *, reserve: Demand | None, reserve_count: int
) -> list[Shape]:
    """Shapes a node can hold now. A long-lane shape also leaves room for `reserve_count` jobs of the
    `reserve` demand (a short job), so the short lane never waits behind training."""
    out = []
    for shape, demand in sorted(demands.items()):
        choice = choose_node(nodes, demand)
        if choice is None:
            continue
        if shape[0] == "long" and reserve is not None and reserve_count > 0:
            after = [n.minus(demand, choice[1]) if n.node_id == choice[0] else n for n in nodes]
            if not _holds(after, reserve, reserve_count):
                continue
        out.append(shape)
    return out


def _holds(nodes: list[NodeView], demand: Demand, count: int) -> bool:
    nodes = list(nodes)
    for _ in range(count):
        choice = choose_node(nodes, demand)
        if choice is None:
            return False
        nodes = [n.minus(demand, choice[1]) if n.node_id == choice[0] else n for n in nodes]
    return True


def shape_demands(manifests: Iterable, *, cpus_per_rank: float) -> dict[Shape, Demand]:
    """One demand per job shape of the catalogue: CPUs per rank, the largest memory limit of the
    exercises with that shape (the job's RLIMIT_AS, so a safe upper bound), their accepted kinds. A shape
    falls back to CPU ranks only if every exercise of that shape does (a job row names only its shape)."""
    out: dict[Shape, Demand] = {}
    for m in manifests:
        shape = (m.lane, m.resources.devices, m.resources.world_size)
        kinds = tuple(k for k in m.resources.device_kinds if k in ACCELERATORS)
        prev = out.get(shape)
        memory = max(m.limits.memory_mb, prev.memory_mb if prev else 0)
        merged = tuple(dict.fromkeys((prev.kinds if prev else ()) + kinds)) or ACCELERATORS
        fallback = m.resources.cpu_fallback and (prev.cpu_fallback if prev else True)
        out[shape] = Demand(
            cpus=m.resources.world_size * cpus_per_rank,
            memory_mb=memory,
            devices=m.resources.devices,
            kinds=merged,
            cpu_fallback=fallback,
        )
    return out


def node_views(
    totals: Mapping[str, Mapping[str, float]],
    available: Mapping[str, Mapping[str, float]] | None,
    held: Mapping[str, list[tuple[Demand, str]]],
    excluded: Iterable[str] = (),
    withheld: Mapping[str, Mapping[str, int]] | None = None,
) -> list[NodeView]:
    """Free resources per node: totals minus our own reservations and the devices `withheld` (node -> kind
    -> count left dirty by a job, ray_hygiene.py), and never more than Ray reports as available (other work
    on a shared cluster). `totals`/`available` are Ray's per-node resource maps."""
    skip = set(excluded)
    views = []
    for node_id, res in totals.items():
        if node_id in skip:
            continue
        cpus, memory_mb = res.get("CPU", 0.0), int(res.get("memory", 0.0) // 2**20)
        installed = {kind: int(res.get(name, 0.0)) for kind, name in RAY_RESOURCE.items()}
        acc = {kind: n - int((withheld or {}).get(node_id, {}).get(kind, 0)) for kind, n in installed.items()}
        for demand, kind in held.get(node_id, []):
            cpus -= demand.cpus
            memory_mb -= demand.memory_mb
            if kind != "cpu":
                acc[kind] -= demand.devices
        if available is not None and node_id in available:
            avail = available[node_id]
            cpus = min(cpus, avail.get("CPU", 0.0))
            memory_mb = min(memory_mb, int(avail.get("memory", 0.0) // 2**20))
            acc = {k: min(v, int(avail.get(RAY_RESOURCE[k], 0.0))) for k, v in acc.items()}
        views.append(NodeView(node_id=node_id, cpus=cpus, memory_mb=memory_mb, accelerators=acc, installed=installed))
    return views

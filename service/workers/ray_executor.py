"""The Ray executor: claimed jobs run as Ray tasks on a cluster's nodes (`TITANGRADE_EXECUTOR=ray`).

The database stays the queue's source of truth: the worker claims, renews leases and stores fenced grades
exactly as with the local executor; Ray only runs `grade_ticket` on a node. The executor keeps its own
ledger of what its jobs hold on each node, so the worker claims only the job shapes a node can hold now
(`placeable`), and every job is pinned to the node chosen for it. A multi-rank job (world size > 1 or
more than one device) gets a one-bundle STRICT_PACK placement group on that node: the ranks are processes
inside one sandbox (learner code never joins the Ray cluster), so one bundle holds all of them.

The devices Ray assigns to the task (`NPU` ids -> ASCEND_RT_VISIBLE_DEVICES, `GPU` ids ->
CUDA_VISIBLE_DEVICES) become the sandbox's DeviceGrant on that node; a device a job leaves busy is held,
then withheld from placement until a probe finds it clean (ray_hygiene.py). Verified on a `ray.cluster_utils`
test cluster with fake NPU counts only; real NPU/GPU nodes are NOT tested (docs/cluster.md).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import queue
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from grading.progress import Placed
from service.config import Settings
from service.workers.engines import engine_spec
from service.workers.executor import (
    ExecutionResult,
    Executor,
    ExecutorUnavailable,
    Faulted,
    GradingTicket,
    NotStarted,
)
from service.workers.placement import (
    RAY_RESOURCE,
    Demand,
    Shape,
    choose_node,
    node_views,
    placeable_shapes,
    shape_demands,
)
from service.workers.ray_hygiene import DirtyDevices, NodeOutcome, busy_ids, hold_until_clean, probe_on_node

log = logging.getLogger("titangrade.ray")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeConfig:
    """What a node needs to grade: sent with every task (the repo and venv are on every node)."""

    database_url: str
    sandbox: str
    exercises_root: str
    reference_root: str
    prewarm: tuple[tuple[str, int], ...] = ()
    prewarm_keys: int = 4
    sandbox_options: tuple[tuple[str, object], ...] = ()  # cgroups etc., as resolved where the worker started
    engine: tuple[str, tuple[tuple[str, float], ...]] = ("notebook", ())  # engines.engine_spec
    device_hold_s: float = 30.0  # settings.ray_device_hold_s


# ---- executing side (runs in a Ray worker process on the chosen node) ------------------------------


def grade_on_node(ticket: GradingTicket, config: NodeConfig) -> NodeOutcome:
    """Grade one ticket on this node with the devices Ray assigned to this task; name those left busy."""
    import ray

    from service.db import transaction
    from service.submissions import events
    from service.workers import executor

    _init_node(config)
    ctx = ray.get_runtime_context()
    ids = ctx.get_accelerator_ids()
    kind = next((k for k, name in RAY_RESOURCE.items() if ids.get(name)), "cpu")
    devices = tuple(int(i) for i in ids.get(RAY_RESOURCE[kind], ())) if kind != "cpu" else ()
    try:  # where the job runs, for operators and the tests; best effort like every progress event
        with transaction(executor._CHILD["sessions"]) as s:
            events.add(
                s,
                submission_id=ticket.submission_id,
                event=Placed(node=ctx.get_node_id(), device_kind=kind, device_ids=devices),
            )
    except Exception:
        pass
    if held := busy_ids(kind, devices):  # Ray gave us a device another process holds: nothing starts
        reason = f"{kind} device(s) {held} on node {ctx.get_node_id()[:12]} are held by another process"
        return NodeOutcome(outcome=NotStarted(reason), kind=kind, dirty=tuple(held))
    outcome = executor.grade_ticket(replace(ticket, device_kind=kind, device_ids=devices))
    dirty = hold_until_clean(kind, devices, hold_s=config.device_hold_s)  # Ray gets them back clean, or named
    if dirty:
        log.error("job %s left %s devices %s busy on node %s", ticket.job_id, kind, dirty, ctx.get_node_id())
    return NodeOutcome(outcome=outcome, kind=kind, dirty=tuple(dirty))


def _init_node(config: NodeConfig) -> None:
    """Once per Ray worker process (Ray reuses them): DB sessions, catalogue, sandbox with warm kernels."""
    from service.workers import executor

    if executor._CHILD.get("config") == config:
        return
    from grading.exercise import Catalogue
    from grading.sandbox import make_sandbox
    from service import bootstrap
    from service.db import make_engine
    from service.workers.engines import grading_engine

    if "sessions" in executor._CHILD:  # another service (database) used this process before
        executor._CHILD["sessions"].kw["bind"].dispose()
        close = getattr(executor._CHILD.get("sandbox"), "close", None)
        if close is not None:  # its warm kernels were built for the old settings
            close()
    executor._CHILD.update(
        sessions=bootstrap.sessions(make_engine(config.database_url)),
        engine=grading_engine(*config.engine),
        catalogue=Catalogue(Path(config.exercises_root), Path(config.reference_root)),
        sandbox=make_sandbox(
            config.sandbox,
            prewarm=dict(config.prewarm) or None,
            prewarm_keys=config.prewarm_keys,
            **dict(config.sandbox_options),
        ),
        config=config,
    )


# ---- dispatching side (runs in the worker) ---------------------------------------------------------


@dataclass(slots=True)
class _Running:
    node_id: str
    demand: Demand
    kind: str
    ref: object  # ray.ObjectRef
    pg: object | None  # ray PlacementGroup


class RayExecutor(Executor):
    name = "ray"
    grants_devices = True  # Ray assigns the devices on the node; the worker's own inventory is unused

    def __init__(self, *, settings: Settings) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ExecutorUnavailable(
                f"TITANGRADE_EXECUTOR=ray needs Ray ({exc}); install it with `pip install -e '.[ray]'`"
            ) from exc
        from grading.exercise import Catalogue

        self._ray = ray
        self._settings = settings
        if not ray.is_initialized():
            try:
                ray.init(
                    address=settings.ray_address or "auto",
                    namespace="titangrade",
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            except Exception as exc:  # ConnectionError, or a timeout when no head answers
                raise ExecutorUnavailable(
                    f"cannot join the Ray cluster at {settings.ray_address!r}: {exc}. Start it with "
                    "`ray start --head` (docs/cluster.md) or set TITANGRADE_RAY_ADDRESS / --address"
                ) from exc
        catalogue = Catalogue(Path(settings.exercises_root), Path(settings.reference_root))
        self.demands = shape_demands((e.manifest for e in catalogue), cpus_per_rank=settings.ray_cpus_per_rank)
        short = [d for (lane, devs, _), d in self.demands.items() if lane == "short" and devs == 0]
        self._reserve = max(short, key=lambda d: (d.cpus, d.memory_mb), default=None)
        self._config = NodeConfig(
            database_url=settings.database_url,
            sandbox=settings.sandbox,
            exercises_root=str(settings.exercises_root),
            reference_root=str(settings.reference_root),
            prewarm=tuple(sorted(settings.prewarm_sizes().items())),
            prewarm_keys=settings.prewarm_keys(),
            sandbox_options=tuple(sorted(settings.sandbox_options().items())),
            engine=engine_spec(settings),
            device_hold_s=settings.ray_device_hold_s,
        )
        self._remote = ray.remote(max_retries=0)(grade_on_node)  # the DB queue retries, not Ray
        self._probe = ray.remote(num_cpus=0, max_retries=0)(probe_on_node)
        self._dirty = DirtyDevices(probe_s=settings.ray_device_probe_s)
        self._offered: tuple[int, str] | None = None  # the devices the last heartbeat offered
        self._running: dict[int, _Running] = {}
        self._suspect: dict[str, float] = {}  # node id -> until when no job is placed there
        self._lock = threading.Lock()
        # Ray runs ObjectRef.future() callbacks on its own IO thread, where a blocking Ray call (removing a
        # placement group) deadlocks; finished tasks are settled on this thread instead.
        self._finished: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._settler, name="tg-ray-settle", daemon=True).start()

    # -- what can run now ------------------------------------------------------------------------------
    def _nodes(self):
        ray = self._ray
        now = time.monotonic()
        with self._lock:
            self._suspect = {n: t for n, t in self._suspect.items() if t > now}
            excluded = set(self._suspect)
        totals = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
        withheld = self._dirty.withheld()
        for gone in set(withheld) - set(totals):
            self._dirty.forget(gone)
        try:  # Ray has no public per-node availability yet; without it, totals minus our ledger decide
            from ray._private.state import state

            available = state.available_resources_per_node()
        except Exception:
            available = None
        with self._lock:
            held: dict[str, list] = {}
            for r in self._running.values():
                held.setdefault(r.node_id, []).append((r.demand, r.kind))
        return node_views(totals, available, held, excluded=excluded, withheld=withheld)

    def offered_devices(self) -> tuple[int, str] | None:
        """The cluster's largest node group of one kind (its NPUs or GPUs), not this worker's own: intake
        refused NPU exercises on a Ray deployment whose worker host has no NPU."""
        best = (0, "cpu")
        try:
            nodes = self._ray.nodes()
        except Exception as exc:  # the GCS unreachable for a moment: the heartbeat must still be written
            log.warning("cannot list the Ray nodes (%s); offering what was seen last", exc)
            return self._offered
        for node in nodes:
            if node.get("Alive"):
                for kind, name in RAY_RESOURCE.items():
                    best = max(best, (int(node.get("Resources", {}).get(name, 0)), kind))
        self._offered = best
        return best

    def placeable(self) -> list[Shape]:
        self._probe_dirty()
        return placeable_shapes(
            self._nodes(), self.demands, reserve=self._reserve, reserve_count=self._settings.short_reserved_slots
        )

    # -- running ------------------------------------------------------------------------------------------
    def _demand(self, ticket: GradingTicket) -> Demand:
        shape = (ticket.lane, ticket.devices, ticket.world_size)
        return self.demands.get(shape) or Demand(
            cpus=ticket.world_size * self._settings.ray_cpus_per_rank, memory_mb=0, devices=ticket.devices
        )

    def submit(self, ticket: GradingTicket) -> cf.Future:
        demand = self._demand(ticket)
        choice = choose_node(self._nodes(), demand)
        if choice is None:  # the cluster changed between the claim and now
            return _done(NotStarted("no Ray node can hold this job now (a node left the cluster?)"))
        node_id, kind = choice
        options = self._task_options(demand, kind)
        pg = None
        if ticket.world_size > 1 or demand.devices > 1:
            from ray.util import placement_group, remove_placement_group
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            bundle = {"CPU": options["num_cpus"], **options.get("resources", {})}
            if options.get("num_gpus"):
                bundle["GPU"] = options["num_gpus"]
            if options.get("memory"):
                bundle["memory"] = options["memory"]
            pg = placement_group([bundle], strategy="STRICT_PACK", bundle_label_selector=[{"ray.io/node-id": node_id}])
            if not pg.wait(timeout_seconds=self._settings.ray_place_timeout_s):
                remove_placement_group(pg)
                self._cool_down(node_id, self._settings.ray_place_timeout_s)
                return _done(
                    NotStarted(
                        f"node {node_id[:12]} did not reserve {bundle} within {self._settings.ray_place_timeout_s} s"
                    )
                )
            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=0)
        else:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
        ref = self._remote.options(**options).remote(ticket, self._config)
        with self._lock:
            self._running[ticket.job_id] = _Running(node_id=node_id, demand=demand, kind=kind, ref=ref, pg=pg)
        future: cf.Future = cf.Future()

        def finished(ray_future: cf.Future) -> None:  # on Ray's IO thread: hand over, nothing more
            self._finished.put((ticket.job_id, ray_future, future))

        ref.future().add_done_callback(finished)
        return future

    def _probe_dirty(self) -> None:
        """Start the due probes of withheld devices (pinned to their node, no CPU reserved)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        for node_id, kind, ids in self._dirty.due():
            try:
                strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
                ref = self._probe.options(scheduling_strategy=strategy).remote(kind, ids)
            except Exception:
                self._dirty.probed(node_id, kind, ids, None)
                continue

            def probed(f: cf.Future, node_id=node_id, kind=kind, ids=ids) -> None:  # Ray's IO thread: no Ray calls
                still = f.result() if f.exception() is None else None
                if clean := self._dirty.probed(node_id, kind, ids, still):
                    log.warning("%s devices %s on node %s are clean again", kind, clean, node_id[:12])

            ref.future().add_done_callback(probed)

    @staticmethod
    def _task_options(demand: Demand, kind: str) -> dict:
        options: dict = {"num_cpus": demand.cpus, "max_retries": 0}
        if demand.memory_mb:
            options["memory"] = demand.memory_mb * 2**20
        if kind == "npu":
            options["resources"] = {"NPU": demand.devices}
        elif kind == "cuda":
            options["num_gpus"] = demand.devices
        return options

    def _cool_down(self, node_id: str, seconds: float) -> None:
        with self._lock:
            self._suspect[node_id] = time.monotonic() + seconds

    def _settler(self) -> None:
        while (item := self._finished.get()) is not None:
            try:
                self._settle(*item)
            except Exception:  # never lose the thread; the job's lease reclaims it if its future is stuck
                log.exception("settling a Ray task failed")

    def _settle(self, job_id: int, ray_future: cf.Future, future: cf.Future) -> None:
        """Free the reservation, then hand the outcome on; a dead node or worker is our fault (retry)."""
        with self._lock:
            running = self._running.pop(job_id, None)
        if running is not None and running.pg is not None:
            from ray.util import remove_placement_group

            with contextlib.suppress(Exception):  # already gone with its node
                remove_placement_group(running.pg)
        try:
            outcome = ray_future.result()
            if isinstance(outcome, NodeOutcome):
                if outcome.dirty and running is not None:  # withheld from placement until a probe finds them clean
                    self._dirty.add(running.node_id, outcome.kind, outcome.dirty)
                outcome = outcome.outcome
        except Exception as exc:
            if running is not None:  # a node that lost a job gets no new one for a while
                self._cool_down(running.node_id, self._settings.ray_node_cooldown_s)
            outcome = _task_failure(exc, self._ray.exceptions)
        else:
            if isinstance(outcome, NotStarted) and running is not None:  # the node was short of a sandbox user
                self._cool_down(running.node_id, self._settings.retry_backoff_s)  # another node may take the next
                log.warning("job %s not started on node %s: %s", job_id, running.node_id[:12], outcome.reason)
        if not future.set_running_or_notify_cancel():
            return
        future.set_result(outcome)

    def shutdown(self) -> None:
        self._finished.put(None)
        with self._lock:
            running = list(self._running.values())
        for r in running:  # their results would be fenced off anyway; stop the work itself
            with contextlib.suppress(Exception):
                self._ray.cancel(r.ref, force=True)
        try:
            self._ray.shutdown()  # tasks owned by this driver die with it
        except Exception:
            log.exception("ray.shutdown failed")


def _task_failure(exc: BaseException, errors) -> ExecutionResult:
    """What a failed Ray task means for the job. Unschedulable: the task never started, typically because
    the node it was pinned to died and the cluster still listed it as alive when we chose it (Ray notices
    a killed node only after its health checks fail, seconds later). That is not an attempt. Anything else
    (node or worker died mid-run, object lost, ...) may have run learner code: a retryable grader fault."""
    text = f"{type(exc).__name__}: {str(exc)[:500]}"
    if isinstance(exc, errors.TaskUnschedulableError):
        return NotStarted(f"Ray could not start the task: {text}")
    return Faulted(f"Ray task failed: {text}", retryable=True)


def _done(outcome: ExecutionResult) -> cf.Future:
    future: cf.Future = cf.Future()
    future.set_result(outcome)
    return future

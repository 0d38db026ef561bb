"""The composition root: which parts this process runs, chosen once and put together here.

- the executor (a local process pool, or Ray) and the worker that drives it;
- the outbox's kinds of target: webhook endpoints and LTI grade passback, each a `TargetSource` and a
  `Sender` (service/outbox/protocol.py), registered with the delivery loop, and asked by the intake (through
  `upload_receivers`) whether anyone listens for a new submission.
The steps every process shares (settings, engine, sessions with their commit hooks) are in
service/bootstrap.py, which the grading processes and the commands of each package use without this module.

Nothing below the entry points (service/app.py, service/commands.py, service/cli.py) imports this module,
so the parts never learn about each other: lti and webhooks meet only through service/outbox.
"""

from __future__ import annotations

import threading

from sqlalchemy.orm import Session, sessionmaker

from service.config import Settings
from service.lti.ags import AgsSender, LtiTargets
from service.outbox.delivery import Deliverer
from service.outbox.protocol import Sender, TargetSource
from service.outbox.receivers import Receivers
from service.outbox.targets import RECEIVED
from service.webhooks.sender import WebhookSender
from service.webhooks.targets import WebhookTargets
from service.workers.devices import WorkerDevices
from service.workers.executor import Executor, LocalExecutor
from service.workers.ray_executor import RayExecutor
from service.workers.worker import Worker

EXECUTORS = ("local", "ray")


def make_executor(settings: Settings, *, processes: int) -> Executor:
    """Choose the backend once: a local process pool, or Ray tasks on a cluster (`TITANGRADE_EXECUTOR=ray`)."""
    if settings.sandbox == "auto":
        raise ValueError("resolve the sandbox first (Settings.resolve_sandbox) so every process uses the same one")
    if settings.executor == "local":
        return LocalExecutor(settings=settings, processes=processes)
    if settings.executor == "ray":
        return RayExecutor(settings=settings)
    raise ValueError(f"unknown executor {settings.executor!r}; this version provides: {', '.join(EXECUTORS)}")


def build_worker(
    settings: Settings,
    *,
    sessions: sessionmaker[Session],
    executor: Executor | None = None,
    devices: WorkerDevices | None = None,
) -> Worker:
    """A worker from settings: the executor and device inventory are chosen here, once, unless given."""
    return Worker(
        settings=settings,
        sessions=sessions,
        executor=executor or make_executor(settings, processes=settings.worker_slots),
        devices=devices or WorkerDevices.from_setting(settings.worker_devices),
    )


def outbox_sources() -> list[TargetSource]:
    """Who may want a grade event: a course's webhook endpoints, and its LTI line items."""
    return [WebhookTargets(), LtiTargets()]


def upload_receivers() -> Receivers:
    """Who listens for "submission received" (LTI line items, subscribed webhook endpoints): the intake
    writes that outbox row only where someone does (service/submissions/received.py)."""
    return Receivers(outbox_sources(), event_type=RECEIVED)


def outbox_senders(settings: Settings) -> list[Sender]:
    """How each kind is sent: signed webhook POSTs, and AGS score POSTs with an OAuth2 token."""
    return [WebhookSender.from_settings(settings), AgsSender.from_settings(settings)]


def build_deliverer(settings: Settings, *, sessions: sessionmaker[Session]) -> Deliverer:
    """The outbox's delivery loop with every kind of target registered."""
    return Deliverer(sessions=sessions, settings=settings, senders=outbox_senders(settings), sources=outbox_sources())


def start_delivery_loop(settings: Settings, *, sessions: sessionmaker[Session]) -> Deliverer:
    """The delivery loop of `serve`, in a daemon thread; returns it (set `.stop` to end it)."""
    deliverer = build_deliverer(settings, sessions=sessions)
    threading.Thread(target=deliverer.run, name="tg-deliver-loop", daemon=True).start()
    return deliverer

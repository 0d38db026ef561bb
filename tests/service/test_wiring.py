"""The composition root (service/wiring.py) and the shared start-up (service/bootstrap.py): the outbox gets
both kinds of target, the executor is chosen once, and only bootstrap's sessions carry the commit hooks."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from service import bootstrap, signals, wiring
from service.auth import cache as credential_cache
from service.config import Settings
from service.db import make_engine, make_sessionmaker


def test_the_delivery_loop_has_a_sender_and_a_source_for_webhooks_and_for_lti(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path}/x.db")
    deliverer = wiring.build_deliverer(settings, sessions=make_sessionmaker(make_engine(settings.database_url)))
    try:
        assert sorted(deliverer.senders) == ["lti", "webhook"]
        assert sorted(source.kind for source in deliverer.sources) == ["lti", "webhook"]
    finally:
        deliverer.pool.shutdown()


def test_the_executor_is_chosen_from_settings_and_an_unknown_one_is_refused(tmp_path):
    settings = Settings(sandbox="unsafe-local", database_url=f"sqlite:///{tmp_path}/x.db")
    with pytest.raises(ValueError, match="this version provides: local, ray"):
        wiring.make_executor(settings.model_copy(update={"executor": "slurm"}), processes=1)
    with pytest.raises(ValueError, match="resolve the sandbox first"):
        wiring.make_executor(settings.model_copy(update={"sandbox": "auto"}), processes=1)


@pytest.mark.parametrize("hook", [signals._after_commit, credential_cache._after_commit])
def test_bootstrap_sessions_carry_the_commit_hooks_and_plain_ones_do_not(tmp_path, hook):
    engine = make_engine(f"sqlite:///{tmp_path}/x.db")
    hooked, plain = bootstrap.sessions(engine), make_sessionmaker(engine)  # both alive: no reused ids
    assert event.contains(hooked, "after_commit", hook)
    assert not event.contains(plain, "after_commit", hook)

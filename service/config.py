"""Typed settings for the service, read from `TITANGRADE_*` variables and validated once at start-up."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from grading.exercise import DEFAULT_EXERCISES_ROOT, DEFAULT_REFERENCE_ROOT
from grading.pipeline import DEFAULT_MAX_BYTES


class UnsafeSettings(ValueError):
    """Settings that would run an insecure service outside development mode."""


class Settings(BaseSettings):
    """Every knob of the service. Units are in the names; see docs/service.md for the table."""

    model_config = SettingsConfigDict(env_prefix="TITANGRADE_", extra="ignore")

    mode: Literal["dev", "prod"] = Field(
        "dev", description="dev relaxes the safety checks and prints a bootstrap token"
    )
    database_url: str = Field(
        "sqlite:///titangrade.db", description="SQLAlchemy URL; postgresql+psycopg://... for PostgreSQL"
    )
    secret_key: str = Field("", description="server secret (signing grade events); required when mode=prod")
    sandbox: Literal["auto", "bwrap", "unsafe-local"] = Field("auto", description="how learner kernels are isolated")
    exercises_root: Path = DEFAULT_EXERCISES_ROOT
    reference_root: Path = DEFAULT_REFERENCE_ROOT
    migrate_on_start: bool = Field(True, description="`serve` upgrades the schema itself; workers never do")
    malloc_arena_max: int = Field(
        2,
        ge=0,
        le=1024,
        description="glibc malloc arenas of an API process (0: glibc's default, 8 per core); few arenas keep "
        "memory freed by many threads from staying fragmented (service/memory.py)",
    )
    malloc_trim_s: float = Field(
        30.0, ge=0, description="an API process hands freed memory back to the system this often (0: never)"
    )
    api_workers: int = Field(
        1,
        ge=1,
        le=64,
        description="API processes `serve` runs (`--api-workers`); more than 1 needs PostgreSQL (SQLite has one "
        "writer, and its in-process wake-up of the workers would not reach them)",
    )

    # queue and workers
    executor: Literal["local", "ray"] = Field(
        "local", description="grading backend: a local process pool, or Ray tasks on a cluster (docs/cluster.md)"
    )
    ray_address: str = Field(
        "auto",
        description='Ray cluster to join with executor=ray: "auto" (the one `ray '
        "start` runs on this host) or HOST:PORT of its head",
    )
    ray_cpus_per_rank: float = Field(1.0, gt=0, description="Ray CPUs a job reserves per rank (world_size ranks)")
    ray_place_timeout_s: float = Field(
        10.0, gt=0, description="a multi-rank job's placement group must be reserved this fast, else the job is retried"
    )
    ray_node_cooldown_s: float = Field(
        30.0, ge=0, description="a node that lost a job (died, crashed) gets no new job for this long"
    )
    ray_device_hold_s: float = Field(
        30.0,
        ge=0,
        description="a Ray task whose devices are still busy after its job holds them this long "
        "waiting for them to come clean, so Ray cannot hand them out (service/workers/ray_hygiene.py)",
    )
    ray_device_probe_s: float = Field(
        15.0, gt=0, description="devices withheld on a Ray node as dirty are probed again this often"
    )
    grading_engine: Literal["notebook", "standin-hold"] = Field(
        "notebook",
        description="what runs a claimed job: the grading engine, or (benchmarks only, refused in prod mode) a "
        "stand-in that grades nothing and holds the job's slot and reservation for STANDIN_HOLD_S "
        "(tests/benchmarks/bench_cluster_deadline.py, service/workers/standin.py)",
    )
    standin_hold_s: str = Field(
        "",
        description='with grading_engine=standin-hold: JSON {"exercise id": seconds held}, "*" for any other',
    )
    worker_slots: int = Field(2, ge=1, description="concurrent grading jobs per worker process")
    short_reserved_slots: int = Field(1, ge=0, description="slots that only take short-lane jobs")
    worker_devices: str = Field(
        "",
        description='accelerators this worker offers, e.g. "npu:0-7" or "cuda:0,1"; '
        'empty = CPU only, "detect" = ask the host',
    )
    sandbox_cgroups: Literal["auto", "require", "off"] = Field(
        "auto",
        description="whole-run memory/process/CPU caps per sandbox run (control groups): auto = required in "
        "prod, used where possible in dev (with a warning where not); off = dev only",
    )
    sandbox_seccomp: Literal["auto", "require", "off"] = Field(
        "auto",
        description="the sandboxed kernels' system-call filter (libseccomp's Python bindings, python3-seccomp): "
        "auto = required in prod, used where possible in dev (with a warning where not); off = dev only",
    )
    sandbox_kernel_start: Literal["exec", "fork"] = Field(
        "exec",
        description="how a sandboxed kernel starts: exec = a fresh interpreter in its sandbox; fork = forked into "
        "the same fresh sandbox from a parent that imported ipykernel once (grading/sandbox/forkserver.py), "
        "falling back to exec for any kernel it cannot start",
    )
    sandbox_cpus_per_run: float = Field(
        0.0,
        ge=0,
        description="CPU quota of one sandbox run in cores (cgroup); "
        "0 = no quota, concurrent runs share the CPU equally",
    )
    sandbox_cpu_weight: int = Field(
        10,
        ge=1,
        le=10000,
        description="CPU weight of each sandbox run (cgroup v2 units; 100 = a plain process, v1 shares x10.24): "
        "below 100 a grading run uses every idle cycle but yields to the API under contention",
    )
    sandbox_prewarm: str = Field(
        "auto",
        description='warm kernels per pool process and kernel family, e.g. "light=1,torch=1"; "" = none; '
        "auto = light=1 with the bwrap sandbox when the host has PREWARM_MB_PER_SLOT of memory available per "
        "worker slot (decided once at start-up)",
    )
    sandbox_prewarm_keys: int = Field(
        4,
        ge=1,
        description="exercises per pool process that keep warm kernels (a warm kernel fits one exercise's "
        "limits and hidden modules); auto lowers it so warm kernels leave every slot two sandbox users",
    )
    worker_max_world_size: int = Field(8, ge=1, description="most ranks one job may launch on this host")
    lease_s: float = Field(60.0, gt=0, description="a claimed job is reclaimed this long after its last heartbeat")
    heartbeat_s: float = Field(10.0, gt=0, description="lease renewal and worker liveness interval")
    poll_s: float = Field(0.5, gt=0, description="idle workers look for jobs this often")
    shutdown_grace_s: float = Field(
        10.0, ge=0, description="on SIGTERM, running jobs get this long before they are handed back to the queue"
    )
    queue_policy: Literal["fair", "fifo"] = Field(
        "fair",
        description="fair: within a lane and priority the next "
        "job goes to the learner with the least work running, then the "
        "one granted longest ago; fifo: oldest job first",
    )
    max_running_per_learner: int = Field(
        0, ge=0, description="jobs of one learner running at once, all workers together; 0 = no cap"
    )
    supersede_queued: Literal["off", "training", "all"] = Field(
        "training",
        description="course default: a new attempt supersedes the same learner's still-queued "
        "attempts at that exercise (training = long-lane exercises only); instructors override it per course",
    )
    estimate_recent_runs: int = Field(
        20,
        ge=1,
        description="waiting-time estimates use the median grading time of this many recent runs of the exercise",
    )
    max_attempts: int = Field(3, ge=1, description="grader-fault retries before a submission is not_gradable")
    retry_backoff_s: float = Field(2.0, ge=0, description="delay before a retried job may run again")
    not_started_max_s: float = Field(
        60.0,
        ge=0,
        description="the longest a job handed back for a host shortage waits: the delay grows from retry_backoff_s "
        "while the shortage lasts, so a long one does not cycle every queued job every few seconds",
    )

    # database outages (service/outage.py): workers wait them out, the API answers 503 with Retry-After
    db_retry_base_s: float = Field(
        0.5,
        gt=0,
        description="first wait of a worker, the LISTEN thread or the webhook delivery loop after a database "
        "error; doubles per failure, with jitter",
    )
    db_retry_max_s: float = Field(
        10.0, gt=0, description="the longest those loops wait between two database retries (db_retry_base_s)"
    )
    db_retry_after_s: int = Field(
        5, ge=1, le=3600, description="the Retry-After (seconds) of a 503 answered while the database is unreachable"
    )

    # request limits
    max_upload_bytes: int = Field(
        DEFAULT_MAX_BYTES,
        gt=0,
        le=DEFAULT_MAX_BYTES,
        description="notebook size limit (413), checked at intake; at most the "
        "engine's own limit, so an accepted notebook is never refused by a worker",
    )
    events_poll_s: float = Field(0.5, gt=0, description="an open event stream looks for new events this often")
    events_max_s: float = Field(
        300.0, gt=0, description="an event stream ends after this long; clients resume with Last-Event-ID"
    )
    http_header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="a request's headers must arrive within this long of the connection or its first "
        "byte (408 and closed)",
    )
    http_body_timeout_s: float = Field(
        60.0, gt=0, description="a request's body must arrive within this long of its headers (408 request_timeout)"
    )
    http_max_header_bytes: int = Field(65536, ge=4096, description="longest request head (431 and closed)")
    http_keep_alive_s: int = Field(5, ge=1, description="an idle keep-alive connection is closed after this long")
    events_max_streams_per_identity: int = Field(
        10, ge=0, description="event streams one identity may hold open per API process (429 beyond); 0 = no cap"
    )
    submissions_per_minute: int = Field(10, ge=1, description="per learner, course and exercise")
    auth_cache_s: float = Field(
        5.0,
        ge=0,
        le=300,
        description="an API process reuses a good credential's principal this long (0 = look it up on every "
        "request); a revocation or role change made in the same process applies at once, one made by another "
        "process (the CLI, a second API process) within this bound",
    )
    max_attempts_per_exercise: int = Field(0, ge=0, description="per learner; 0 = unlimited")

    # webhooks (grade events out) and signed intake (service/webhooks, service/intake)
    webhook_retry_base_s: float = Field(5.0, gt=0, description="first retry delay; doubles per attempt, with jitter")
    webhook_retry_max_delay_s: float = Field(36000.0, gt=0, description="longest delay between two attempts")
    webhook_retry_window_s: float = Field(
        90000.0,
        gt=0,
        description="a delivery is retried for this long after its "
        "first attempt, then dead-lettered (default 25 h; tests shorten it)",
    )
    webhook_timeout_s: float = Field(
        20.0,
        ge=1,
        le=120,
        description="connect and read timeout of one delivery attempt (15-30 s is what receivers expect)",
    )
    webhook_concurrency: int = Field(8, ge=1, description="deliveries sent at once by one delivery loop")
    webhook_batch: int = Field(64, ge=1, description="deliveries claimed per round")
    webhook_poll_s: float = Field(1.0, gt=0, description="an idle delivery loop looks for due deliveries this often")
    webhook_lease_s: float = Field(60.0, gt=0, description="a claimed delivery is retaken by another loop after this")
    webhook_allowed_hosts: str = Field(
        "",
        description='prod mode: hosts or CIDRs that may be private/loopback endpoints, e.g. "lms.internal,10.1.0.0/16"',
    )
    webhook_rotation_overlap_s: float = Field(
        86400.0,
        ge=0,
        description="after a secret rotation the old secret still signs (a second signature) for this long",
    )

    # LTI 1.3 (service/lti): the tool's keys, URLs and session lifetimes
    lti_tool_url: str = Field(
        "http://127.0.0.1:8000",
        description="the public base URL of this service, as "
        "platforms reach it (login, launch, JWKS and deep-link URLs are built from it)",
    )
    lti_key_dir: Path = Field(
        Path("lti-keys"),
        description="the tool's private keys (0600 files in a 0700 directory), generated at first start",
    )
    lti_key_retention_s: float = Field(7 * 86400.0, ge=0, description="a rotated-out key stays in the JWKS this long")
    lti_state_ttl_s: float = Field(
        600.0, gt=0, description="a login initiation must be answered by a launch within this long"
    )
    lti_session_s: float = Field(8 * 3600.0, gt=0, description="lifetime of the bearer token a launch hands out")
    lti_jwks_cache_s: float = Field(
        300.0,
        ge=0,
        description="a platform's JWKS is fetched again after this long "
        "(a token naming an unknown kid refetches it at most once per lti_jwks_refetch_s)",
    )
    lti_clock_skew_s: float = Field(60.0, ge=0, description="leeway for exp/iat of platform id_tokens")
    lti_pick_ttl_s: float = Field(
        300.0, gt=0, le=3600, description="a deep-linking pick token is valid this long (single use, one browser)"
    )
    lti_jwks_refetch_s: float = Field(
        30.0,
        ge=0,
        description="a platform's keyset is fetched at most once per this interval on an unknown kid "
        "or after a failed fetch (launches in between are refused without a fetch)",
    )
    lti_frame_ancestors: str = Field(
        "",
        description="extra origins that may frame the LTI pages a platform shows in a frame (the deep-link "
        'answer, the framed sign-in link), space separated, e.g. "https://*.instructure.com"; the platform\'s '
        "issuer and login URL origins always may",
    )
    lti_rate_per_ip_per_min: int = Field(
        120, ge=1, description="logins (and, separately, launches) one client IP may start per minute"
    )
    lti_rate_per_platform_per_min: int = Field(
        1200, ge=1, description="logins (and, separately, launches) naming one platform issuer per minute"
    )
    # LTI Advantage services the tool calls (service/lti/calls.py, nrps.py, lineitems.py, registration.py)
    lti_service_max_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="the most bytes of one platform answer read (a roster page, results)"
    )
    lti_service_max_pages: int = Field(
        100, ge=1, description="the most pages of one paged platform answer followed (Link: rel=next)"
    )
    lti_roster_max_members: int = Field(
        20000, ge=1, description="a roster with more members than this is refused whole (nothing is changed)"
    )
    lti_roster_sync_s: float = Field(
        3600.0, ge=0, description="a launch asks for a roster sync of its course at most once per this long"
    )
    lti_registration_max_pending: int = Field(
        20, ge=1, description="dynamic registrations awaiting an admin's approval at once; more are refused"
    )

    # telemetry (service/telemetry, docs/service.md "Telemetry")
    log_format: Literal["json", "text"] = Field(
        "json", description="log lines: one JSON object each (with request/job ids), or text for a terminal"
    )
    otlp_endpoint: str = Field(
        "",
        description="OTLP/HTTP collector base URL for grading spans, e.g. http://otel:4318; empty: the "
        "standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, and without either no spans leave the process",
    )
    otel_service_name: str = Field("titangrade", min_length=1, description="service.name of the exported spans")

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.mode == "prod":
            problems = []
            if len(self.secret_key) < 32:
                problems.append(
                    "TITANGRADE_SECRET_KEY must be set to at least 32 characters "
                    "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(48))'`)"
                )
            if self.sandbox == "unsafe-local":
                problems.append("TITANGRADE_SANDBOX=unsafe-local runs learner code unisolated; use auto or bwrap")
            if self.sandbox_cgroups == "off":
                problems.append(
                    "TITANGRADE_SANDBOX_CGROUPS=off leaves a run's total memory, processes and CPU uncapped; use auto"
                )
            if self.sandbox_seccomp == "off":
                problems.append(
                    "TITANGRADE_SANDBOX_SECCOMP=off lets learner code create namespaces, mount and use bpf; use auto"
                )
            if self.grading_engine != "notebook":
                problems.append(
                    f"TITANGRADE_GRADING_ENGINE={self.grading_engine} is a benchmark stand-in that grades nothing; "
                    "use notebook"
                )
            if problems:
                raise UnsafeSettings("refusing to start in prod mode: " + "; ".join(problems))
        if self.short_reserved_slots >= self.worker_slots and self.worker_slots > 1:
            raise ValueError(
                "TITANGRADE_SHORT_RESERVED_SLOTS must be below TITANGRADE_WORKER_SLOTS so long jobs can run"
            )
        if self.api_workers > 1 and self.database_url.startswith("sqlite"):
            raise ValueError(
                "TITANGRADE_API_WORKERS (--api-workers) above 1 needs PostgreSQL: SQLite takes one writer at a time, "
                "so more API processes only queue for its lock; keep 1 or set TITANGRADE_DATABASE_URL=postgresql://..."
            )
        if self.db_retry_base_s > self.db_retry_max_s:
            raise ValueError("TITANGRADE_DB_RETRY_BASE_S must not exceed TITANGRADE_DB_RETRY_MAX_S")
        if self.webhook_lease_s < self.webhook_timeout_s:
            raise ValueError(
                "TITANGRADE_WEBHOOK_LEASE_S must be at least TITANGRADE_WEBHOOK_TIMEOUT_S, or another delivery loop "
                "retakes a delivery that is still being sent"
            )
        if self.heartbeat_s >= self.lease_s:
            raise ValueError(
                "TITANGRADE_HEARTBEAT_S must be shorter than TITANGRADE_LEASE_S or leases expire while held"
            )
        return self

    @field_validator("lti_frame_ancestors")
    @classmethod
    def _frame_ancestors(cls, v: str) -> str:
        origins = v.replace(",", " ").split()
        bad = [o for o in origins if not FRAME_ORIGIN.fullmatch(o)]
        if bad:
            raise ValueError(
                f"TITANGRADE_LTI_FRAME_ANCESTORS: {bad[0]!r} is not an origin; give scheme://host[:port], "
                "space separated (a leading *. for subdomains), e.g. https://*.instructure.com"
            )
        return " ".join(origins)

    @field_validator("standin_hold_s")
    @classmethod
    def _standin_holds(cls, v: str) -> str:
        cls.parse_holds(v)
        return v.strip()

    @staticmethod
    def parse_holds(v: str) -> dict[str, float]:
        """STANDIN_HOLD_S as {exercise id: seconds}; a clear error for anything else."""
        import json

        if not v.strip():
            return {}
        try:
            holds = json.loads(v)
        except ValueError as exc:
            raise ValueError(f'TITANGRADE_STANDIN_HOLD_S is not JSON ({exc}); give {{"ch07.x": 0.5, "*": 1}}') from exc
        if not isinstance(holds, dict) or not all(
            isinstance(k, str) and isinstance(s, int | float) and not isinstance(s, bool) and 0 <= s < 86400
            for k, s in holds.items()
        ):
            raise ValueError('TITANGRADE_STANDIN_HOLD_S must map exercise ids to seconds (0-86400), e.g. {"*": 1}')
        return {k: float(s) for k, s in holds.items()}

    def standin_holds(self) -> dict[str, float]:
        """Seconds the stand-in engine holds each exercise's job (empty with the real engine)."""
        return self.parse_holds(self.standin_hold_s)

    @field_validator("sandbox_prewarm")
    @classmethod
    def _prewarm_spec(cls, v: str) -> str:
        if v.strip() != "auto":
            cls.parse_prewarm(v)
        return v.strip()

    def prewarm_sizes(self) -> dict[str, int]:
        """Warm kernels per pool process and family (see `prewarm_keys` for how many exercises)."""
        return self.parse_prewarm(self.sandbox_prewarm) if self.sandbox_prewarm != "auto" else self._auto_prewarm()[0]

    def prewarm_keys(self) -> int:
        """Exercises per pool process that keep warm kernels (least recently used dropped first)."""
        return self.sandbox_prewarm_keys if self.sandbox_prewarm != "auto" else self._auto_prewarm()[1]

    def _auto_prewarm(self) -> tuple[dict[str, int], int]:
        """light=1 where the sandbox is bwrap (its PID namespace dies with the pool process, so a warm kernel
        never outlives it; unsafe-local kernels would), the host has PREWARM_MB_PER_SLOT available per slot,
        and the sandbox users (one per live kernel, host-wide) leave each slot one for its running kernel and
        one for a refill; else none."""
        if self.sandbox != "bwrap" or available_mb() < PREWARM_MB_PER_SLOT * self.worker_slots:
            return {}, 0
        from grading.sandbox.users import installed_sandbox_users

        keys = min(
            self.sandbox_prewarm_keys, (len(installed_sandbox_users()) - 2 * self.worker_slots) // self.worker_slots
        )
        return ({"light": 1}, keys) if keys >= 1 else ({}, 0)

    @staticmethod
    def parse_prewarm(spec: str) -> dict[str, int]:
        """ "light=1,torch=1" -> {"light": 1, "torch": 1}."""
        out: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            family, _, count = part.partition("=")
            if family not in ("light", "torch", "training") or not count.isdigit():
                raise ValueError(
                    f"TITANGRADE_SANDBOX_PREWARM entry {part!r} must look like light=1 "
                    "(families: light, torch, training)"
                )
            out[family] = int(count)
        return out

    def resolve_sandbox(self) -> tuple[Settings, str]:
        """Decide the sandbox once (below), then what "auto" pre-warming means with it on this host."""
        settings, warning = self._resolve_isolation()
        settings, note = settings._resolve_prewarm()
        return settings, "; ".join(filter(None, (warning, note)))

    def _resolve_isolation(self) -> tuple[Settings, str]:
        """Decide the sandbox once: auto means bwrap, and an unusable bwrap is refused in every mode.

        Learner kernels run unisolated only when a deployer opts in explicitly with
        TITANGRADE_SANDBOX=unsafe-local (dev mode only; every result then says `sandbox: unsafe-local`).
        """
        if self.sandbox == "unsafe-local":
            return self, (
                "WARNING: TITANGRADE_SANDBOX=unsafe-local: learner kernels run UNISOLATED "
                "(development only; every result says sandbox: unsafe-local)"
            )
        if self.sandbox != "auto":
            return self._resolve_bwrap()
        from grading.sandbox import probe

        found = probe()
        if found.usable:
            return self.model_copy(update={"sandbox": "bwrap"})._resolve_bwrap()
        raise UnsafeSettings(
            f"refusing to start: the bwrap sandbox is unavailable: {found.reason}. Fix the host "
            "(run scripts/install-system-deps.sh as root), or, on a development machine only, opt in "
            "to unisolated kernels with TITANGRADE_SANDBOX=unsafe-local"
        )

    def _resolve_bwrap(self) -> tuple[Settings, str]:
        settings, warning = self._resolve_cgroups()
        settings, seccomp_warning = settings._resolve_seccomp()
        return settings, "; ".join(filter(None, (warning, seccomp_warning)))

    def _resolve_seccomp(self) -> tuple[Settings, str]:
        """Decide once whether kernels get the system-call filter: prod requires it, dev warns without."""
        if self.sandbox_seccomp == "off":  # dev only (prod refuses it in _refuse_unsafe)
            return self, ""
        from grading.sandbox import seccomp

        found = seccomp.probe()
        if found.usable:
            return self.model_copy(update={"sandbox_seccomp": "require"}), ""
        if self.mode == "prod" or self.sandbox_seccomp == "require":
            raise UnsafeSettings(
                f"refusing to start: sandboxed kernels need their system-call filter, which cannot be built "
                f"here: {found.reason}"
            )
        return self.model_copy(update={"sandbox_seccomp": "off"}), (
            "WARNING: sandboxed kernels run WITHOUT a system-call filter: learner code can create namespaces, "
            f"mount and use bpf (development only): {found.reason}"
        )

    def _resolve_cgroups(self) -> tuple[Settings, str]:
        """Decide once whether sandbox runs get control groups: prod requires them, dev warns without."""
        if self.sandbox_cgroups == "off":  # dev only (prod refuses it in _refuse_unsafe)
            return self, ""
        from grading.sandbox import cgroups

        found = cgroups.probe()
        if found.usable:
            return self.model_copy(update={"sandbox_cgroups": "require"}), ""
        if self.mode == "prod" or self.sandbox_cgroups == "require":
            raise UnsafeSettings(
                f"refusing to start: whole-run memory/process/CPU caps need control groups, "
                f"which cannot be used here: {found.reason}"
            )
        return self.model_copy(update={"sandbox_cgroups": "off"}), (
            f"WARNING: sandbox runs get no whole-run memory/process/CPU caps (development only): {found.reason}"
        )

    def _resolve_prewarm(self) -> tuple[Settings, str]:
        """Pin "auto" to what it means on this host, once, so the log and every pool process agree."""
        if self.sandbox_prewarm != "auto":
            return self, ""
        sizes, keys = self._auto_prewarm()
        spec = ",".join(f"{family}={count}" for family, count in sizes.items())
        note = ""
        if not sizes and self.sandbox == "bwrap":
            note = (
                f"note: no pre-warmed kernels: auto wants {PREWARM_MB_PER_SLOT} MB available ({available_mb()} MB "
                "here) and 3 sandbox users (tgsbxN) per worker slot; add users with TITANGRADE_SANDBOX_USERS=N "
                "scripts/install-system-deps.sh, or force with TITANGRADE_SANDBOX_PREWARM=light=1"
            )
        return self.model_copy(update={"sandbox_prewarm": spec, "sandbox_prewarm_keys": max(keys, 1)}), note

    def sandbox_options(self) -> dict:
        """What the grading processes pass to make_sandbox (after resolve_sandbox)."""
        if self.sandbox != "bwrap":
            return {}
        return {
            "cgroups": self.sandbox_cgroups,
            "cpus_per_run": self.sandbox_cpus_per_run,
            "cpu_weight": self.sandbox_cpu_weight,
            "seccomp": self.sandbox_seccomp,
            "kernel_start": self.sandbox_kernel_start,
        }

    def with_dev_secret(self) -> tuple[Settings, bool]:
        """In dev mode with no secret, generate an ephemeral one; returns (settings, generated)."""
        if self.secret_key or self.mode != "dev":
            return self, False
        return self.model_copy(update={"secret_key": secrets.token_urlsafe(48)}), True


FRAME_ORIGIN = re.compile(r"https?://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?")  # a CSP host-source
PREWARM_MB_PER_SLOT = 1024  # auto pre-warming needs this much available memory per worker slot


def available_mb() -> int:
    """MemAvailable of this host in MB (0 where /proc/meminfo cannot be read: no auto pre-warming)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def load_settings(**overrides) -> Settings:
    """Read the environment (plus explicit overrides) and validate; the only place settings are built."""
    return Settings(**overrides)

"""Exercise manifests and the catalogue.

An exercise lives in `exercises/chNN/<name>/` as `exercise.toml` plus the learner notebook; its hidden
material lives in `reference/<id>/` (`<name>_answer.txt`, JSON; `solution.ipynb`). The format is
documented in docs/exercise-format.md. Reference files are read only here, in the grader's process.
"""

from __future__ import annotations

import json
import re
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from grading.errors import GraderFault, UnknownExercise

EXERCISE_ID = re.compile(r"^ch(\d{2})\.[a-z][a-z0-9_]*$")  # chapters are data: any two-digit chapter
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EXERCISES_ROOT = REPO_ROOT / "exercises"
DEFAULT_REFERENCE_ROOT = REPO_ROOT / "reference"

AnswerKind = Literal["value", "function", "training_run"]
CheckKind = Literal["exact", "mapping", "numeric", "shape", "sequence", "set", "function", "metric_trace"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Text(_Strict):
    """Learner-facing text in English and Chinese; English is the fallback."""

    en: str
    zh: str = ""

    def get(self, lang: str = "en") -> str:
        return self.zh if lang.startswith("zh") and self.zh else self.en


class Limits(_Strict):
    cell_timeout_s: float = Field(60, gt=0, description="wall clock per cell")
    run_timeout_s: float = Field(300, gt=0, description="wall clock for the whole notebook")
    cpu_time_s: int = Field(600, gt=0, description="RLIMIT_CPU per process")
    memory_mb: int = Field(4096, ge=256, description="RLIMIT_AS per process")
    max_processes: int = Field(256, ge=16, description="RLIMIT_NPROC for the sandbox user (torchrun hangs below 16)")
    max_file_mb: int = Field(256, gt=0, description="RLIMIT_FSIZE")
    scratch_mb: int = Field(512, gt=0, description="size of the writable scratch tmpfs")
    max_output_kb: int = Field(256, gt=0, description="kept output per cell; the rest is truncated")
    max_code_cells: int = Field(300, gt=0, description="code cells a submission may have; more is refused at intake")
    # Whose time was it (issue 24, grading/steps/cpu_clock.py): a cell or call limit of L s lets computing
    # code use cpu_cores_implied x L CPU seconds of its run; one held back by a busy host runs on, up to
    # wall_backstop_factor x L, and past that without its CPU it was starved: a grader fault, retried.
    cpu_cores_implied: float = Field(
        0.5, gt=0, le=64, description="cores a time limit implies: a limit of L s is used up at this x L CPU-s"
    )
    wall_backstop_factor: float = Field(
        8.0, ge=1, le=100, description="a cell held back by the host runs on up to this x its limit (wall)"
    )
    harness_timeout_s: float = Field(
        120,
        gt=0,
        description="wall clock of each grader-owned launcher cell and of each call of what it binds; "
        "size it from the reference run (its timeout is a grader fault, never the learner's)",
    )


DeviceKind = Literal["npu", "cuda", "cpu"]
# the default accepts either accelerator and never falls back: running on the CPU is the author's choice
DEVICE_KINDS: tuple[DeviceKind, ...] = ("npu", "cuda")


class Resources(_Strict):
    """Where a job runs. `devices` accelerators of the first kind in `device_kinds` that the node has
    (`npu` runs hccl, `cuda` nccl); "cpu" in the list (last) is the fallback: a node with too few of the
    listed accelerators runs the job's `world_size` ranks on its CPU (gloo). A node that has the devices but
    has them busy waits for them: the same submission never lands on the CPU because a node was loaded."""

    world_size: int = Field(1, ge=1, description="processes the exercise launches (ranks)")
    devices: int = Field(0, ge=0, description="accelerators the job needs; 0 = runs on CPU")
    device_kinds: tuple[DeviceKind, ...] = DEVICE_KINDS

    @model_validator(mode="after")
    def _fallback_last(self) -> Resources:
        kinds = self.device_kinds
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"device_kinds {list(kinds)} names a kind twice")
        if self.devices and "cpu" in kinds and kinds[-1] != "cpu":
            raise ValueError(
                f'device_kinds {list(kinds)}: with devices = {self.devices}, "cpu" is the fallback and comes '
                "last (accelerator kinds first, in the order they are preferred)"
            )
        if self.devices and not self.accelerator_kinds:
            raise ValueError(f"devices = {self.devices} but device_kinds {list(kinds)} names no accelerator kind")
        return self

    @property
    def accelerator_kinds(self) -> tuple[str, ...]:
        return tuple(k for k in self.device_kinds if k != "cpu")

    @property
    def cpu_fallback(self) -> bool:
        """A device job that runs on CPU ranks where the node has too few accelerators."""
        return bool(self.devices) and "cpu" in self.device_kinds


class Answer(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    kind: AnswerKind = "value"


class Check(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    answer: str
    kind: CheckKind
    points: float = Field(gt=0)
    title: Text | None = None


MODULE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


class Policy(_Strict):
    """What the learner must write themselves and what they may use (docs/exercise-format.md).

    `own`: graded callables whose code must come from the learner's notebook cells (default: every
    `function` answer). `forbid`: modules whose code the learner may not use; the sandbox hides each
    one from the kernel (grading/sandbox/views.py) and a graded callable that reaches one scores 0
    (grading/provenance.py). `allow`: modules the notebook is meant to use (documentation, checked not
    to overlap `forbid`). `lesson`: said to the learner when using a library *is* the exercise.
    """

    own: tuple[str, ...] | None = None
    forbid: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    lesson: Text | None = None

    @field_validator("forbid", "allow")
    @classmethod
    def _modules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not re.match(MODULE_NAME, name):
                raise ValueError(f"{name!r} is not a dotted module name")
        return v

    @model_validator(mode="after")
    def _disjoint(self) -> Policy:
        for f in self.forbid:
            for a in self.allow:
                if a == f or a.startswith(f + "."):
                    raise ValueError(f"allowed module {a!r} lies inside forbidden {f!r}")
        return self


class Manifest(_Strict):
    id: str
    chapter: int = Field(ge=1, le=99)
    title: Text
    notebook: str
    summary: Text | None = None
    kernel_family: Literal["light", "torch", "training"] = "light"
    lane: Literal["short", "long"] = "short"
    seed: int = 1234
    limits: Limits = Limits()
    resources: Resources = Resources()
    answers: tuple[Answer, ...]
    checks: tuple[Check, ...]
    policy: Policy = Policy()

    @field_validator("id")
    @classmethod
    def _id_format(cls, v: str) -> str:
        if not EXERCISE_ID.match(v):
            raise ValueError(f"exercise id {v!r} must look like 'ch07.snake_name' (chNN: a two-digit chapter)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        if int(self.id[2:4]) != self.chapter:
            raise ValueError(f"id {self.id} does not match chapter {self.chapter}")
        names = {a.name for a in self.answers}
        for c in self.checks:
            if c.answer not in names:
                raise ValueError(f"check {c.name!r} reads undeclared answer {c.answer!r}")
        if len({c.name for c in self.checks}) != len(self.checks):
            raise ValueError("check names must be unique")
        functions = {a.name for a in self.answers if a.kind == "function"}
        for name in self.policy.own or ():
            if name not in functions:
                raise ValueError(f"policy.own names {name!r}, which is not a function answer")
        return self

    @property
    def own(self) -> tuple[str, ...]:
        """The graded callables that must be the learner's own code."""
        if self.policy.own is not None:
            return self.policy.own
        return tuple(a.name for a in self.answers if a.kind == "function")

    @property
    def max_score(self) -> float:
        return float(sum(c.points for c in self.checks))


class Exercise:
    """A manifest with its locations. `reference()` is grader-side only."""

    def __init__(self, manifest: Manifest, directory: Path, reference_dir: Path) -> None:
        self.manifest = manifest
        self.directory = directory
        self.reference_dir = reference_dir

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def short_name(self) -> str:
        return self.id.split(".", 1)[1]

    @property
    def notebook_path(self) -> Path:
        return self.directory / self.manifest.notebook

    @property
    def solution_path(self) -> Path:
        return self.reference_dir / "solution.ipynb"

    @property
    def answer_path(self) -> Path:
        return self.reference_dir / f"{self.short_name}_answer.txt"

    @cached_property
    def _reference(self) -> dict[str, Any]:
        try:
            return json.loads(self.answer_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # a broken reference is our fault, never the learner's zero
            raise GraderFault(f"reference answers for {self.id} unreadable: {exc}", retryable=False) from exc

    def reference(self) -> dict[str, Any]:
        """The hidden answer file: {"checks": {check_name: {...}}}, read once. Never sent to a kernel.
        Raises GraderFault (not retryable) when it is missing or not JSON."""
        return self._reference

    def summary(self) -> dict[str, Any]:
        m = self.manifest
        return {
            "id": m.id,
            "chapter": m.chapter,
            "title": m.title.en,
            "title_zh": m.title.zh,
            "max_score": m.max_score,
            "notebook": str(self.notebook_path.relative_to(self.directory.parents[1])),
            "kernel_family": m.kernel_family,
            "lane": m.lane,
            "resources": m.resources.model_dump(),
            "limits": m.limits.model_dump(),
        }


def load_manifest(path: Path) -> Manifest:
    """Parse and validate one exercise.toml; errors name the file and each bad field."""
    try:
        with path.open("rb") as fh:
            return Manifest.model_validate(tomllib.load(fh))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'manifest'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{path}: {problems}") from None


class Catalogue:
    """Every exercise under `exercises_root`, keyed by id."""

    def __init__(
        self, exercises_root: Path = DEFAULT_EXERCISES_ROOT, reference_root: Path = DEFAULT_REFERENCE_ROOT
    ) -> None:
        self.exercises_root = Path(exercises_root)
        self.reference_root = Path(reference_root)
        self._by_id: dict[str, Exercise] = {}
        for manifest_path in sorted(self.exercises_root.glob("ch[0-9][0-9]/*/exercise.toml")):
            manifest = load_manifest(manifest_path)
            if manifest.id in self._by_id:
                raise ValueError(f"duplicate exercise id {manifest.id} in {manifest_path}")
            self._by_id[manifest.id] = Exercise(manifest, manifest_path.parent, self.reference_root / manifest.id)

    def __iter__(self):
        return iter(sorted(self._by_id.values(), key=lambda e: e.id))

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, exercise_id: str) -> bool:
        return exercise_id in self._by_id

    def get(self, exercise_id: str) -> Exercise:
        try:
            return self._by_id[exercise_id]
        except KeyError:
            raise UnknownExercise(exercise_id) from None

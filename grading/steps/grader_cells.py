"""The grader's own cells: a seed cell before the learner's code and extraction cells after it.

Their sources carry a random per-run name and nonce; their outputs are read here and never shown to
the learner. Expected values are never placed in them: function checks send only inputs. Learner state
lives across calls, so every check's public calls run before any hidden call: a function that records
hidden inputs can only replay them into results nobody echoes (docs/grading-engine.md, threat model).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat
import numpy as np

import grading.kernel_side as kernel_side
from grading import harness, provenance
from grading.checks.function import RULE_HINTS
from grading.codec import MAX_ANSWER_BYTES, Opaque, Raised, decode
from grading.exercise import Exercise
from grading.i18n import MESSAGES

ANSWERS_MIME = "application/vnd.titangrade.answers+json"
_KERNEL_SOURCE = Path(kernel_side.__file__).read_text(encoding="utf-8")
DEFAULT_CALL_TIMEOUT_S = 10.0
CALL_SLACK_S = 1.5  # decoding the inputs and encoding the result, on top of a call's own time limit
MIN_SCRUB_CHARS = 4  # shorter hidden strings are not scrubbed (they would cut up ordinary words)


@dataclass(frozen=True, kw_only=True)
class CallPart:
    """One check's calls within a cell of calls: results and failures are kept under `label` (a check's
    public calls, or its hidden cases), `indices` say which of the reference's calls, in reference order."""

    label: str
    check: str
    answer: str  # the learner's function they call
    indices: tuple[int, ...]
    calls: tuple[dict[str, Any], ...]  # their inputs, one per index
    timeout_s: float  # the kernel's alarm per call; the grader's clock allows CALL_SLACK_S more
    harness: bool = False  # `answer` is bound by a grader-owned launcher: its limit is the harness's own
    alarm_s: float = 0.0  # the kernel's own alarm (0: timeout_s); later than the grader's clock, which
    # knows whether the host held the call back (cpu_clock.py), so that clock decides a timeout

    @property
    def steps(self) -> int:
        """Results the kernel publishes for this part: one per call (a missing function: one marker per
        call), one empty result for a check without calls."""
        return max(len(self.indices), 1)


@dataclass(frozen=True, kw_only=True)
class GraderCell:
    """A cell the learner never sees; `label` names it in messages, `budget_s` is its time limit."""

    label: str
    source: str
    budget_s: float
    parts: tuple[CallPart, ...] = ()  # a cell of calls: the checks' calls it makes, in order
    harness: bool = False  # a grader-owned launcher: running out of its own limit is never the learner's
    binds: tuple[str, ...] = ()  # a launcher's top-level names (its answers), to explain them when it raises
    # A cell of calls runs them one after the other, each under its own clock (its part's timeout_s plus
    # CALL_SLACK_S, from the previous call's result), and publishes each result as it ends
    # (kernel_side.each_call). One cell carries every check's public calls, another every hidden one:
    # a round trip per check cost more than most calls themselves.

    @property
    def labels(self) -> tuple[str, ...]:
        """Where this cell's results (or the reason it has none) are kept."""
        return tuple(dict.fromkeys(p.label for p in self.parts)) or (self.label,)

    def part_at(self, step: int) -> CallPart | None:
        """The part whose call makes this cell's `step`-th published result (None past the last)."""
        for part in self.parts:
            if step < part.steps:
                return part
            step -= part.steps
        return None

    @property
    def step_limits(self) -> tuple[float, ...]:
        """The grader's clock for each published result, in order (empty: not a cell of calls)."""
        return tuple(p.timeout_s + CALL_SLACK_S for p in self.parts for _ in range(p.steps))


@dataclass(kw_only=True)
class GraderPlan:
    nonce: str
    handle: str  # the kernel global holding the extractor closure
    seed: GraderCell
    extract: list[GraderCell] = field(default_factory=list)
    hidden_inputs: tuple[str, ...] = ()  # strings of hidden calls' inputs and expected values
    scrub: tuple[str, ...] = ()  # removed from every string of the result: nonce, handle, hidden strings
    public_text: str = ""  # what the learner may see anyway: fragments found here are not scrubbed
    stated_text: str = ""  # what the notebook tells the learner (template, public cases, hints): feedback may
    # name a key found here (grading/checks/values.py)

    payload_bytes: int = 0  # answers payload admitted so far this run (see admit_payload)

    def isolated(self) -> GraderPlan:
        """The same plan with each check's calls in a cell of their own (the engine's re-run after a kernel
        died in a cell of several checks' calls); labels, call indices and limits unchanged."""
        cells: list[GraderCell] = []
        for cell in self.extract:
            if len(cell.parts) <= 1:
                cells.append(cell)
                continue
            cells.extend(call_cell(p.label, parts=(p,), handle=self.handle, nonce=self.nonce) for p in cell.parts)
        return replace(self, extract=cells, payload_bytes=0)

    def rest_of(self, cell: GraderCell, done: int) -> GraderCell | None:
        """The cell for `cell`'s calls after its first `done` published results (None when none are
        left): a call the grader interrupted ends its cell, and the calls after it still run."""
        rest: list[CallPart] = []
        for part in cell.parts:
            if done >= part.steps:
                done -= part.steps
                continue
            if done:
                part = replace(part, indices=part.indices[done:], calls=part.calls[done:])
                done = 0
            rest.append(part)
        return call_cell(cell.label, parts=tuple(rest), handle=self.handle, nonce=self.nonce) if rest else None

    def parts_of(self, check: str) -> list[tuple[str, tuple[int, ...]]]:
        """(label, call indices) of the payloads holding `check`'s call results, public part first."""
        parts: dict[str, list[int]] = {}
        for c in self.extract:
            for part in c.parts:
                if part.check == check:
                    parts.setdefault(part.label, []).extend(part.indices)
        return [(label, tuple(indices)) for label, indices in parts.items()]

    def scrub_for(self, sources: list[str]) -> tuple[str, ...]:
        """The scrub list for one submission: less the hidden strings its own cells hold as a whole word. The
        learner wrote those (a key of their own result, a name in their code), so showing them reveals nothing,
        while masking them would both hide the learner's own values and tell them the word is a hidden one.
        The nonce and the extractor's name are never spared; a string the learner only computes still is
        scrubbed, and so is every fragment of a hidden string they did not write out whole."""
        text = "\n".join(sources)
        spared = {
            n for n in self.scrub if n not in (self.nonce, self.handle) and n in text and _whole_word(n).search(text)
        }
        return tuple(n for n in self.scrub if n not in spared)

    def admit_payload(self, payload: Any, *, max_bytes: int = MAX_ANSWER_BYTES) -> bool:
        """Count one extraction cell's payload against the run's answer cap; False (and nothing counted)
        if it would pass the cap: the caller drops it, and the answers it held fail as too large."""
        size = payload_size(payload, stop_at=max_bytes - self.payload_bytes + 1)
        if self.payload_bytes + size > max_bytes:
            return False
        self.payload_bytes += size
        return True


def plan(exercise: Exercise, *, reference: dict[str, Any]) -> GraderPlan:
    """Seed, one extraction cell for plain answers, one cell of every function check's public calls, the
    provenance cell, then one cell of every hidden call: no hidden input reaches the kernel before the
    last public call has run."""
    m = exercise.manifest
    nonce = secrets.token_hex(16)
    handle = f"_tg_{secrets.token_hex(6)}"
    eager_torch = m.kernel_family != "light"
    seed_src = (
        "def _titangrade_boot():\n"
        "    ns = {'__name__': 'titangrade_kernel'}\n"
        f"    exec(compile({_KERNEL_SOURCE!r}, '<titangrade>', 'exec'), ns)\n"
        f"    return ns['install']({int(m.seed)}, {eager_torch!r}, {MAX_ANSWER_BYTES!r})\n"
        f"{handle} = _titangrade_boot()\n"
        "del _titangrade_boot\n"
    )
    prov_handle = f"_tg_{secrets.token_hex(6)}"
    if m.own:  # the provenance reporter, installed before learner code (grading/provenance.py)
        seed_src += provenance.seed_source(prov_handle)
    seed = GraderCell(label="seed", source=seed_src, budget_s=max(60.0, m.limits.cell_timeout_s))
    harness_cells = [
        GraderCell(
            label=f"harness {i}",
            budget_s=m.limits.harness_timeout_s,
            source=harness.cell_source(src, handle=handle, nonce=nonce),
            harness=True,
            binds=tuple(harness.bound_names(src)),
        )
        for i, src in enumerate(reference.get("harness", []))
    ]  # grader-owned launchers first, under limits of their own (not the learner's cell limit)
    launchers = {name for src in reference.get("harness", []) for name in harness.bound_names(src)}
    kinds = {a.name: a.kind for a in m.answers}
    read_s = min(DEFAULT_CALL_TIMEOUT_S, m.limits.cell_timeout_s)  # reading one answer may not outlast a cell
    cells = [
        *harness_cells,
        GraderCell(
            label="answers",
            source=f"{handle}({nonce!r}, {kinds!r}, {{}}, {read_s!r})\n",
            budget_s=read_s * len(kinds) + 15.0,
        ),
    ]
    checks = reference.get("checks", {})
    public_parts: list[CallPart] = []
    hidden_parts: list[CallPart] = []
    hidden_inputs: list[str] = []
    for check in m.checks:
        if check.kind != "function":
            continue
        spec = checks.get(check.name, {})
        launched = check.answer in launchers  # the function called is the grader's launcher, not the learner's
        timeout = m.limits.harness_timeout_s if launched else float(spec.get("timeout_s", DEFAULT_CALL_TIMEOUT_S))
        calls = spec.get("calls", [])
        public = tuple(i for i, c in enumerate(calls) if c.get("public", False))
        hidden = tuple(i for i, c in enumerate(calls) if not c.get("public", False))
        for c in (calls[i] for i in hidden):  # decoded: the codec's own markers (`__tensor__`, `dtype`) hide nothing
            hidden_inputs.extend(_strings(decode([c.get("args", []), c.get("kwargs", {}), c.get("expect")])))
        # A check with no calls still gets one (empty) part, so a missing function is reported as such.
        split = [(f"check {check.name}", public, public_parts)] if public or not hidden else []
        if hidden:
            split.append((f"check {check.name}, hidden cases", hidden, hidden_parts))
        for label, indices, into in split:
            sent = tuple({"args": calls[i].get("args", []), "kwargs": calls[i].get("kwargs", {})} for i in indices)
            part = CallPart(
                label=label,
                check=check.name,
                answer=check.answer,
                indices=indices,
                calls=sent,
                timeout_s=timeout,
                harness=launched,
                alarm_s=timeout * m.limits.wall_backstop_factor + CALL_SLACK_S,
            )
            into.append(part)
    public_cells = [call_cell("checks", parts=tuple(public_parts), handle=handle, nonce=nonce)] if public_parts else []
    hidden_cells = [call_cell("hidden cases", parts=tuple(hidden_parts), handle=handle, nonce=nonce)]
    hidden_cells = hidden_cells if hidden_parts else []
    hidden_strings = tuple(sorted(set(hidden_inputs), key=len, reverse=True))
    stated = _stated_text(exercise, checks)
    public_text = _public_text(exercise, checks, stated)
    scrub = (nonce, handle, *(h for h in hidden_strings if len(h) >= MIN_SCRUB_CHARS and h not in public_text))
    if m.own:  # where each graded callable's code comes from (grading/provenance.py); no hidden input in it
        public_cells.append(
            GraderCell(
                label=provenance.LABEL,
                budget_s=read_s + 15.0,
                source=provenance.cell_source(prov_handle, nonce, m.own, read_s),
            )
        )
    return GraderPlan(
        nonce=nonce,
        handle=handle,
        seed=seed,
        extract=cells + public_cells + hidden_cells,
        hidden_inputs=hidden_strings,
        scrub=scrub,
        public_text=public_text,
        stated_text=stated,
    )


def call_cell(label: str, *, parts: tuple[CallPart, ...], handle: str, nonce: str) -> GraderCell:
    """The cell making every call of `parts`, in order, each result published as it ends."""
    payload = {
        p.check: {"answer": p.answer, "calls": list(p.calls), "timeout_s": p.alarm_s or p.timeout_s} for p in parts
    }  # a check appears once per cell: its public and its hidden calls never share one
    return GraderCell(
        label=label,
        parts=parts,
        source=(
            f"import json as _tg_json\n{handle}({nonce!r}, {{}}, "
            f"_tg_json.loads({json.dumps(payload)!r}), {DEFAULT_CALL_TIMEOUT_S!r}, True)\ndel _tg_json\n"
        ),
        budget_s=sum(p.timeout_s + CALL_SLACK_S for p in parts for _ in range(p.steps)),
    )


def _stated_text(exercise: Exercise, checks: dict[str, Any]) -> str:
    """What the notebook itself tells the learner: the released template's cells, the public calls (inputs,
    labels and expected results: a public case is the learner's to see and to run), and the hints."""
    shown: list[Any] = []
    for spec in checks.values():
        shown += [spec.get("feedback"), spec.get(RULE_HINTS)]
        shown.extend(
            {k: c.get(k) for k in ("args", "kwargs", "label", "expect")}
            for c in spec.get("calls", [])
            if c.get("public", False)
        )
    return "\n".join([json.dumps(shown, ensure_ascii=False), *_template_sources(exercise)])  # sources as written


def _public_text(exercise: Exercise, checks: dict[str, Any], stated: str) -> str:
    """Everything a learner may see anyway: what the notebook states (`_stated_text`), the manifest, the
    engine's messages, and the names feedback gives by design (a mapping's expected keys; a trace's metrics,
    run.json keys and file patterns). A hidden string found in it is not secret, and scrubbing it would
    mangle feedback and the outputs the result keeps (a template's self-check naming a result key)."""
    shown: list[Any] = [exercise.manifest.model_dump(mode="json"), MESSAGES]
    kinds = {c.name: c.kind for c in exercise.manifest.checks}
    for name, spec in checks.items():
        if kinds.get(name) == "mapping" and isinstance(spec.get("expected"), dict):
            shown.append(list(spec["expected"]))
        elif kinds.get(name) == "metric_trace":
            shown.append(
                [spec.get("metrics"), spec.get("absent_files"), spec.get("present_files")]
                + [list(spec.get(k) or {}) for k in ("equals", "band", "monotone", "bounded", "run")]
                + [(spec.get("recorded_band") or {}).get("metrics")]
            )
    return "\n".join([json.dumps(shown, ensure_ascii=False), stated])


def _template_sources(exercise: Exercise) -> list[str]:
    """The cell sources of the notebook learners are given (tests/exercises/test_catalogue.py keeps hidden
    expected values out of it); none when the exercise has no template file."""
    try:
        cells = json.loads(exercise.notebook_path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return []
    sources = (c.get("source", "") for c in cells if isinstance(c, dict))
    return ["".join(s) if isinstance(s, list) else str(s) for s in sources]


def _strings(value: Any) -> list[str]:
    """Every string inside a decoded reference input (dict keys, a string tensor's items, an opaque value's repr
    and a raised error's message included)."""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Opaque):
            out += [v.repr, v.type]
        elif isinstance(v, Raised):
            out += [v.type, v.message]
        elif isinstance(v, np.ndarray):
            stack.extend(v.tolist() if v.dtype.kind in "OUS" else [])
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)
    return out


def _whole_word(needle: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(needle)}(?![A-Za-z0-9_])")


def payload_size(value: Any, *, stop_at: int | None = None) -> int:
    """Approximate bytes of a JSON value (string characters plus 16 per node), counted without
    recursion or copies; stops counting once past `stop_at`."""
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        total += 16
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        if stop_at is not None and total > stop_at:
            break
    return total


def as_cell(cell: GraderCell) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(cell.source)


def read_payload(outputs: list[dict[str, Any]], *, nonce: str) -> dict[str, Any] | None:
    """The answers payload from one extraction cell's outputs, or None if absent or forged."""
    for out in outputs:
        data = payload_of(out, nonce=nonce)
        if data is not None:
            return data
    return None


def payload_of(out: dict[str, Any], *, nonce: str) -> dict[str, Any] | None:
    """One output's answers payload, or None if it holds none or a forged one."""
    if out.get("output_type") not in ("display_data", "execute_result"):
        return None
    data = out.get("data", {}).get(ANSWERS_MIME)
    if isinstance(data, str):
        if len(data) > MAX_ANSWER_BYTES * 2:
            return None
        try:
            data = json.loads(data)
        except (ValueError, RecursionError):  # a forged, deeply nested string is just not a payload
            return None
    if isinstance(data, dict) and secrets.compare_digest(str(data.get("nonce", "")), nonce):
        return data
    return None

"""The learner-facing policy cell: what the learner writes and what they may use, from `[policy]`.

`exercises build` puts this bilingual markdown cell right after the title cell of every template,
solution and mistake fixture, so the notebook says exactly what the grader checks
(docs/exercise-format.md#policy). It is generated, never hand-written: a manifest edit changes it.
"""

from __future__ import annotations

from grading.exercise import Manifest
from grading.messages import POLICY, POLICY_MODULES


def _module(name: str, lang: str) -> str:
    if name not in POLICY_MODULES:
        return f"`{name}`"
    return POLICY.text("module", lang, plain=POLICY_MODULES.text(name, lang), name=name)


def _names(names: list[str] | tuple[str, ...], lang: str) -> str:
    return POLICY.text("list_sep", lang).join(f"`{n}`" for n in names)


def _lines(manifest: Manifest, lang: str) -> list[str]:
    """The cell's part in one language (texts from grading/messages.py's POLICY)."""
    policy = manifest.policy
    own = manifest.own
    values = [a.name for a in manifest.answers if a.kind == "value"]
    runs = [a.name for a in manifest.answers if a.kind == "training_run"]
    sep = POLICY.text("list_sep", lang)

    lines = [POLICY.text("heading", lang), ""]
    if own:
        lines.append(POLICY.text("own", lang, names=_names(own, lang)))
    if values:
        lines.append(POLICY.text("values", lang, names=_names(values, lang)))
    if runs:
        lines.append(POLICY.text("runs", lang, names=_names(runs, lang)))
    if policy.forbid:
        rule = POLICY.text("forbid_import", lang)
        if own:
            rule += POLICY.text("forbid_own", lang)
        if values:
            rule += POLICY.text("forbid_values", lang)
        modules = sep.join(_module(m, lang) for m in policy.forbid)
        lines.append(POLICY.text("off_limits", lang, modules=modules, rule=rule))
    else:
        lines.append(POLICY.text("off_limits_none", lang))
    allowed = [_module(m, lang) for m in policy.allow] + [POLICY.text("stdlib", lang)]
    lines.append(POLICY.text("allowed", lang, modules=sep.join(allowed)))
    if policy.lesson:
        lines.append(POLICY.text("lesson", lang, lesson=policy.lesson.get(lang)))
    return lines


def policy_markdown(manifest: Manifest) -> str:
    """The cell's source: Chinese, a rule, then English (the notebooks' bilingual layout)."""
    return "\n".join([*_lines(manifest, "zh"), "", "---", "", *_lines(manifest, "en")])

"""axe-core inside a real page: the npm package (scripts/install.sh puts it under .node/) evaluated in the
page by the browser's own engine, then `axe.run` over the whole document.

`assert_accessible(page)` fails with every critical or serious violation named (rule, help text, and the
first elements it found), so a failing test says what to fix. The script is evaluated through the
DevTools protocol, which the pages' Content-Security-Policy does not govern, so nothing in the pages is
loosened for the tests."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
AXE = REPO / ".node" / "node_modules" / "axe-core" / "axe.min.js"
SEVERE = ("critical", "serious")

_RUN = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ')),
  }));
}"""


def available() -> bool:  # for a report; the tests call violations(), which fails without it
    return AXE.exists()


def violations(page, *, impacts: tuple[str, ...] = SEVERE) -> list[dict]:
    """axe-core's violations on the page as it is now, of the given impacts."""
    if not AXE.exists():
        raise RuntimeError(f"axe-core is not installed at {AXE}: run scripts/install.sh (it needs npm)")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    return [v for v in page.evaluate(_RUN) if v["impact"] in impacts]


def describe(found: list[dict]) -> str:
    return "\n".join(f"{v['impact']}: {v['id']} ({v['help']}) at {', '.join(v['nodes'])}" for v in found)


def assert_accessible(page, *, where: str = "") -> None:
    found = violations(page)
    assert not found, f"axe-core on {where or page.url}:\n{describe(found)}"

"""The one error every authoring tool reports: a mistake in an exercise's source, at `file:line`, with the fix."""

from __future__ import annotations

from pathlib import Path


class AuthoringError(ValueError):
    """A mistake in an exercise's source, located at `path:line`, with the fix."""

    def __init__(self, path: Path | str, line: int, problem: str, fix: str) -> None:
        self.path, self.line, self.problem, self.fix = Path(path), line, problem, fix
        super().__init__(f"{path}:{line}: {problem}\n    fix: {fix}")

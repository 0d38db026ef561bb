"""Exercise authoring: master files -> template, solution, answer file, mistake fixtures (docs/exercise-format.md)."""

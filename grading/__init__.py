"""titangrade grading engine: a plain library (no HTTP, no database).

Entry point: `grading.pipeline.grade_notebook`. Manifests and the catalogue live in
`grading.exercise`, the result format in `grading.result`, kernels are started by a
`grading.sandbox.Sandbox`.
"""

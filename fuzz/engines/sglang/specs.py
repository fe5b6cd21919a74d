"""Which specs are SGLang's own model and which name code to run: pure rules on the spec's text (a leaf)."""

from __future__ import annotations

NAME = "sglang"


def is_model_spec(spec: str) -> bool:
    return spec == "reference" or spec.startswith("reference@")


def runs_named_code(spec: str) -> bool:
    """``reference[@REVISION]`` is our own model and ``sglang==X.Y.Z`` a release fetched by its version; anything
    else executes the Python file it points at (or the installed package)."""
    spec = (spec or "").strip()
    return not (is_model_spec(spec) or spec.startswith("sglang=="))

"""The sizes this tool accepts from a file, checked before anything heavy is imported.

A case file with ``context_len`` 10**9 must be refused in a blink, even
under a small address-space limit where importing torch would not fit.
``allocator_model.config`` is the one home of the configuration limits
(``LIMITS``, ``TENSOR_BUDGET``), but importing it imports torch; so this
module reads the two constants from that file's source (``ast``, no code
run) and ``check_case_sizes`` applies them to a case's ``config`` with the
message ``ServingConfig`` gives.  ``tests/test_hostile_input.py`` holds
both to the model's own: the same numbers, the same one-line message.  If
the source cannot be read this way (a refactor), the early check steps
aside and the full validation after the import still refuses the case.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import BadInput
from .jsonfile import JsonFileError, read_json

MAX_CASE_BYTES = 1 << 20  # a case file is a few kilobytes; a lifecycle script of thousands of steps fits
MAX_EXPECT_BYTES = 1 << 20  # matrix --expect: a few signatures per release
# What one replay may cost, predicted from the case before any work (``ReplayMeter``).  Work is counted in
# row-columns per step (every step checks each held row up to its width): measured at ~21 ns each on this
# project's 2-core machine (8 rows x 1,048,576 columns x 200 steps: 37 s), so the budget is ~6 s of it.
REPLAY_WORK = 1 << 28
REPLAY_OUTPUT = 1 << 20  # bytes a replay prints at the most (its story: a line per step, write and release)
REPLAY_LINE_BYTES = 256  # what one line of a story may take (they average ~175)
ADMIT = "admit"  # allocator_model.requests.Op.ADMIT, as text (this module imports no torch; a test holds them equal)
ROW_HEADROOM_BOUND = 4096 + 2 * 1024 + 4  # W - C at the most: a page tail, twice the draft tokens, 4
# The largest integer a target's sizing answer may be (a page, a length, a reserve, a row width): the longest
# row this tool could need (LIMITS' context_len, a page tail at the largest allocator page, page_size x
# attn_dcp_size, twice the most draft tokens, 4).  Past it the answer sizes no tensor here: a finding
# (``sizing-out-of-range``), never a 26 TB allocation (tests/test_hostile_security.py holds it to LIMITS).
MAX_SIZING_ANSWER = (1 << 20) + 4096 * 64 + 2 * 1024 + 4


class _NotAConstant(Exception):
    pass


def _constant(node: ast.expr) -> Any:
    """An integer expression (1 << 20, 64 * 1024), or a dict of string keys to them; nothing else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | str) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _constant(node.left), _constant(node.right)
        ops = {ast.LShift: int.__lshift__, ast.Mult: int.__mul__, ast.Add: int.__add__, ast.Sub: int.__sub__}
        if type(node.op) in ops and isinstance(left, int) and isinstance(right, int) and right < 64:
            return ops[type(node.op)](left, right)
        if isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right < 64:
            return left**right
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_constant(k): _constant(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    raise _NotAConstant


def _model_config_source() -> str | None:
    """The path of ``allocator_model/config.py``, found without importing the package."""
    spec = importlib.util.find_spec("allocator_model")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "config.py")


@functools.cache
def config_limits() -> tuple[dict[str, int], int] | None:
    """``(LIMITS, TENSOR_BUDGET)`` as ``allocator_model/config.py`` assigns them; None if they cannot be read."""
    path = _model_config_source()
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    found: dict[str, Any] = {}
    for node in tree.body:
        target: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id in ("LIMITS", "TENSOR_BUDGET") and value is not None:
            try:
                found[target.id] = _constant(value)
            except _NotAConstant:
                return None
    limits, budget = found.get("LIMITS"), found.get("TENSOR_BUDGET")
    if not isinstance(limits, dict) or not isinstance(budget, int):
        return None
    if not all(isinstance(k, str) and isinstance(v, int) for k, v in limits.items()):
        return None
    return limits, budget


def _size(value: object) -> int | None:
    """A JSON integer (not a boolean), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def size_problem(config: Mapping[str, Any]) -> str | None:
    """What ``ServingConfig`` would say of a configuration past a limit (its wording), or None.

    Only sizes are judged here; every other rule is the model's, after its import.
    """
    known = config_limits()
    if known is None:
        return None
    limits, budget = known
    for name, most in limits.items():
        value = _size(config.get(name))
        if value is not None and value > most:
            shown = str(value) if value < 10**15 else f"~1e{len(str(value)) - 1}"
            return f"{name} {shown} is past this tool's limit of {most}"
    requests, context = _size(config.get("max_running_requests")), _size(config.get("context_len"))
    if requests is not None and context is not None and requests > 0 and context > 0:
        entries = (requests + 1) * context
        if entries > budget:
            return (
                f"(max_running_requests + 1) x context_len = {entries} req_to_token entries, past this "
                f"tool's budget of {budget}"
            )
    return None


def check_case_sizes(path: str) -> None:
    """BadInput (one line) for a case file that cannot be read within ``MAX_CASE_BYTES`` or whose sizes are
    past the limits; everything else is left to the full validation (``fuzz.findings.casefile``)."""
    try:
        doc = read_json(path, MAX_CASE_BYTES, "case file")
    except JsonFileError as e:
        raise BadInput(str(e)) from None
    config = doc.get("config") if isinstance(doc, dict) else None
    problem = size_problem(config) if isinstance(config, dict) else None
    if problem is None and isinstance(doc, dict) and doc.get("kind") == "lifecycle":
        problem = lifecycle_cost_problem(config, doc.get("case"))
    if problem:
        raise BadInput(f"{path}: {problem}")


class ReplayMeter:
    """The predicted cost of replaying a step script, step by step: work (row-columns checked) and output (bytes).

    An upper bound read from the case alone: every admitted request counts
    as holding a row (at most ``max_running_requests``), each row as wide as
    ``context_len`` plus the most headroom a row can have, and each step
    prints its line and one per row held.  Dropping steps never raises it,
    so a shortened script costs no more than the run it came from.  The
    lifecycle machine stops a run before a step would pass the budget, so
    every case it writes replays within it; a case file past it is refused
    when read (one line, exit 2).
    """

    def __init__(self, config: Mapping[str, Any]):
        rows, context = _size(config.get("max_running_requests")), _size(config.get("context_len"))
        self.rows = max(1, rows or 1)
        self.width = max(1, context or 1) + ROW_HEADROOM_BOUND
        self.held = 0
        self.work = 0
        self.output = 4 * REPLAY_LINE_BYTES  # the header: target, config, step count, verdict

    def step(self, step: object) -> None:
        if isinstance(step, Mapping) and step.get("op") == ADMIT:
            self.held = min(self.rows, self.held + 1)
        self.work += max(1, self.held) * self.width
        self.output += (2 + self.held) * REPLAY_LINE_BYTES

    def steps(self, steps: Iterable[object]) -> ReplayMeter:
        for s in steps:
            self.step(s)
        return self

    def within(self) -> bool:
        return self.work <= REPLAY_WORK and self.output <= REPLAY_OUTPUT

    def problem(self) -> str | None:
        """Why the script is past the replay budget (one line), or None."""
        if self.work > REPLAY_WORK:
            return (
                f"replaying it would check ~{self.work:.2e} row-columns (steps x rows held x row width), past this "
                f"tool's replay budget of {REPLAY_WORK:.2e} (about 6 s)"
            )
        if self.output > REPLAY_OUTPUT:
            return f"its story would print ~{self.output:,} bytes, past this tool's replay budget of {REPLAY_OUTPUT:,}"
        return None


def lifecycle_cost_problem(config: object, case: object) -> str | None:
    """``ReplayMeter.problem`` of a lifecycle case's step script (None for anything else: checked later)."""
    steps = case.get("steps") if isinstance(case, Mapping) else None
    if not isinstance(config, Mapping) or not isinstance(steps, list):
        return None
    return ReplayMeter(config).steps(steps).problem()

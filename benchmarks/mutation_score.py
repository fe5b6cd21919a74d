"""Mutation score: is every quick verdict as strong as the bounded proof? Mutants of clean sizing files, judged.

    python benchmarks/mutation_score.py [--shapes 0.5.18,0.5.23,main] [--limit N] [--seed S] [--no-plugin]
                                        [--releases 0.5.16..0.5.23]

Bases, one per API shape, each as clean as its release's known bugs allow:
``0.5.18`` (0.5.16-0.5.18's accessors shape) and ``0.5.23`` (0.5.19-0.5.23's
alloc-page/UNO shape) from the real wheels in the tool's cache, with the
page-1 headroom (#33579) fixed; ``main`` from ``tests/sglang_shapes/main.py``.
A small AST mutator (``mutants``) changes one point of one sizing function at
a time: an operator, a constant +-1, a comparison, a dropped term or factor,
a ceiling turned floor, a dropped ``max``/``min``.

A mutant's verdict by each entry point is the set of bug groups it reports;
it is *killed* when that set holds a group the base's does not. Equivalence
is decided by ``prove --space small``, then the full space on its survivors
only: a mutant neither finds beyond the base is equivalent. Entry points:
``run --profile ci`` (in process, the model's write path: the sizing verdict)
and the pytest plugin line (``pytest --pyargs fuzz.properties
--kvrow-target=FILE@VERSION``, a subprocess, as a user types it).

``--releases``: the unmutated releases, ``run --profile ci``'s groups against
``prove``'s (what the former ``ci_vs_prove.py`` printed): a group ``run`` reports that
``prove`` does not is a false alarm of the quick verdict or a finding outside
prove's scope, and is printed as such. Exit 1 when a non-equivalent mutant
survives an entry point, or a release's ci groups miss a proved group.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.common.profiles import get_profile  # noqa: E402
from fuzz.findings.kinds import Signature  # noqa: E402
from fuzz.prove.quick import proof_stage  # noqa: E402
from fuzz.prove.request import request  # noqa: E402
from fuzz.prove.sweep import prove  # noqa: E402
from fuzz.run.engine import campaign  # noqa: E402
from fuzz.run.sglang import WritePathMode  # noqa: E402
from fuzz.targets import resolve_target  # noqa: E402
from fuzz.targets.base import TargetError  # noqa: E402
from fuzz.targets.sglang.wheels import read_from_wheel, release_wheel  # noqa: E402

MAIN_SHAPE = ROOT / "tests" / "sglang_shapes" / "main.py"
PAGE_1_FIX = {  # #33579 fixed as the reference states it: the reserve term at every allocator page
    "0.5.18": (
        "    if get_spec().speculative_algorithm is not None and page_size > 1:\n",
        "    if get_spec().speculative_algorithm is not None:\n",
    ),
    "0.5.23": ("        if page_size > 1 or spec_algo.is_uno():\n", "        if True:\n"),
}


# -- the mutator -----------------------------------------------------------------------------------------------

SWAP_OPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.FloorDiv, ast.Add),
    ast.FloorDiv: (ast.Mult,),
}
SWAP_CMP: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE,),
    ast.LtE: (ast.Lt,),
    ast.Gt: (ast.GtE,),
    ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
}


@dataclass(frozen=True)
class Mutant:
    """One point of one function changed: ``name`` says where and how (``function:line what``)."""

    name: str
    source: str


def _is_ceiling(node: ast.AST) -> bool:
    """``(x + p - 1) // p``: a ceiling division written as SGLang writes it."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.FloorDiv)
        and isinstance(node.left, ast.BinOp)
        and isinstance(node.left.op, ast.Sub)
    )


def _edits(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every single-point replacement of ``node`` (what, the new node)."""
    if isinstance(node, ast.BinOp):
        for op in SWAP_OPS.get(type(node.op), ()):
            yield f"{type(node.op).__name__} -> {op.__name__}", ast.BinOp(node.left, op(), node.right)
        if isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
            yield "drop the right term", node.left
            yield "drop the left term", node.right
        if _is_ceiling(node):
            inner = node.left
            assert isinstance(inner, ast.BinOp)
            yield "ceiling -> floor", ast.BinOp(inner.left, ast.FloorDiv(), node.right)
    elif isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool):
        for delta in (-1, 1):
            yield f"{node.value} -> {node.value + delta}", ast.Constant(node.value + delta)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        for op in SWAP_CMP.get(type(node.ops[0]), ()):
            yield f"{type(node.ops[0]).__name__} -> {op.__name__}", ast.Compare(node.left, [op()], node.comparators)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("max", "min")
        and len(node.args) == 2
        and not node.keywords
    ):
        yield f"drop {node.func.id}, keep the first", node.args[0]
        yield f"drop {node.func.id}, keep the second", node.args[1]


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, new: ast.AST):
        self.target, self.new = target, new

    def visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.new
        return super().visit(node)


def _points(tree: ast.Module) -> list[tuple[ast.FunctionDef, ast.AST]]:
    """The nodes of the module's top-level functions, in walk order (the same order on every parse)."""
    return [(fn, node) for fn in tree.body if isinstance(fn, ast.FunctionDef) for node in ast.walk(fn)]


def mutants(source: str) -> list[Mutant]:
    """Every single-point mutant of the module's top-level functions (not its imports), each built on a fresh
    parse of ``source`` (a node is found again there by its place in the walk)."""
    unchanged = ast.unparse(ast.parse(source))
    out: list[Mutant] = []
    for k, (fn, node) in enumerate(_points(ast.parse(source))):
        for j, (what, _) in enumerate(list(_edits(node))):
            fresh = ast.parse(source)
            twin = _points(fresh)[k][1]
            new = list(_edits(twin))[j][1]
            tree = ast.fix_missing_locations(_Replace(twin, ast.copy_location(new, twin)).visit(fresh))
            text = ast.unparse(tree)
            if text != unchanged:
                out.append(Mutant(f"{fn.name}:{getattr(node, 'lineno', fn.lineno)} {what}", text))
    return out


# -- verdicts --------------------------------------------------------------------------------------------------

SIGNATURE_LINE = re.compile(r"(?:WITNESS |COUNTEREXAMPLE )?([a-z][a-z-]*/\S+?) on \S")


@dataclass
class Verdicts:
    """One file's groups by each entry point, and the seconds each took."""

    prove_small: frozenset[str] = frozenset()
    prove_full: frozenset[str] | None = None
    ci: frozenset[str] = frozenset()
    plugin: frozenset[str] | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def _timed(verdicts: Verdicts, name: str, started: float) -> None:
    verdicts.seconds[name] = time.monotonic() - started


def prove_groups(spec: str, space: str) -> frozenset[str]:
    target = resolve_target(spec)
    return frozenset(str(s) for s in prove(target, request(target, space)).groups)


def ci_groups(spec: str) -> frozenset[str]:
    target = resolve_target(spec)
    result = campaign(target, get_profile("ci"), proof=proof_stage, write_path=WritePathMode.MODEL)
    if result.error:
        return frozenset({f"error/{result.error[:60]}"})
    return frozenset(str(f.signature) for f in result.findings)


def plugin_groups(spec: str) -> frozenset[str]:
    """The groups named by the plugin line's failures (``pytest --pyargs fuzz.properties --kvrow-target=SPEC``)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--pyargs",
            "fuzz.properties",
            f"--kvrow-target={spec}",
            "-o",
            "addopts=",
            "--tb=short",
        ],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        timeout=600,
    )
    found = set()
    for m in SIGNATURE_LINE.finditer(done.stdout):
        try:
            found.add(str(Signature.parse(m.group(1))))
        except ValueError:
            continue
    if done.returncode not in (0, 1):
        found.add(f"error/pytest exit {done.returncode}")
    return frozenset(found)


def judge(spec: str, base: Verdicts | None, plugin: bool) -> Verdicts:
    v = Verdicts()
    t = time.monotonic()
    v.prove_small = prove_groups(spec, "small")
    _timed(v, "prove small", t)
    if base is not None and v.prove_small <= base.prove_small:  # a survivor of the small space: the full one
        t = time.monotonic()
        v.prove_full = prove_groups(spec, "full")
        _timed(v, "prove full", t)
    t = time.monotonic()
    v.ci = ci_groups(spec)
    _timed(v, "run ci", t)
    if plugin:
        t = time.monotonic()
        v.plugin = plugin_groups(spec)
        _timed(v, "plugin", t)
    return v


# -- bases -----------------------------------------------------------------------------------------------------


def wheel_sizing_source(release: str) -> str:
    """The release's sizing module, out of its wheel (the tool's cache; fetched once if absent)."""
    return read_from_wheel(release_wheel(release))


def base_source(shape: str) -> tuple[str, str]:
    """(source, version) of the clean base of ``shape``."""
    if shape == "main":
        return MAIN_SHAPE.read_text(), ""
    text = wheel_sizing_source(shape)
    old, new = PAGE_1_FIX[shape]
    if text.count(old) != 1:
        raise SystemExit(f"sglang {shape}'s sizing file no longer has the page-1 condition {old!r}")
    return text.replace(old, new), shape


def spec_of(path: Path, version: str) -> str:
    return f"{path}@{version}" if version else str(path)


@dataclass
class Score:
    shape: str
    mutants: int = 0
    stillborn: int = 0  # the loader refuses it (exit 2): not a verdict
    equivalent: int = 0
    killed: dict[str, int] = field(default_factory=lambda: {"run ci": 0, "plugin": 0})
    survivors: dict[str, list[str]] = field(default_factory=lambda: {"run ci": [], "plugin": []})
    seconds: dict[str, list[float]] = field(default_factory=dict)


def score_shape(shape: str, limit: int | None, seed: int, plugin: bool, work: Path) -> Score:
    source, version = base_source(shape)
    base_path = work / shape / "base" / "allocation_sizing.py"
    base_path.parent.mkdir(parents=True)
    base_path.write_text(source)
    print(f"[{shape}] base: judging {spec_of(base_path, version)}", flush=True)
    base = judge(spec_of(base_path, version), None, plugin)
    base.prove_full = prove_groups(spec_of(base_path, version), "full")
    print(
        f"[{shape}] base groups: prove {len(base.prove_full)}, run ci {len(base.ci)}"
        + (f", plugin {len(base.plugin or ())}" if plugin else ""),
        flush=True,
    )
    every = mutants(source)
    chosen = random.Random(seed).sample(every, min(limit, len(every))) if limit else every
    score = Score(shape, mutants=len(chosen))
    for i, m in enumerate(chosen, 1):
        path = work / shape / f"m{i}" / "allocation_sizing.py"
        path.parent.mkdir(parents=True)
        path.write_text(m.source)
        try:
            v = judge(spec_of(path, version), base, plugin)
        except TargetError as e:
            score.stillborn += 1
            print(f"[{shape}] {i}/{len(chosen)} {m.name}: refused at load ({str(e).splitlines()[0][:100]})", flush=True)
            continue
        for k, s in v.seconds.items():
            score.seconds.setdefault(k, []).append(s)
        new_by_proof = (v.prove_small - base.prove_small) or ((v.prove_full or frozenset()) - base.prove_full)
        if not new_by_proof:
            score.equivalent += 1
            print(f"[{shape}] {i}/{len(chosen)} {m.name}: equivalent", flush=True)
            continue
        verdicts = {"run ci": v.ci - base.ci}
        if plugin:
            verdicts["plugin"] = (v.plugin or frozenset()) - (base.plugin or frozenset())
        words = []
        for entry, new in verdicts.items():
            if new:
                score.killed[entry] += 1
                words.append(f"{entry} killed")
            else:
                score.survivors[entry].append(m.name)
                words.append(f"{entry} SURVIVED")
        print(
            f"[{shape}] {i}/{len(chosen)} {m.name}: proof finds {sorted(new_by_proof)[:2]}; {', '.join(words)}",
            flush=True,
        )
    return score


def print_score(s: Score, plugin: bool) -> bool:
    live = s.mutants - s.stillborn - s.equivalent
    print(
        f"\n{s.shape}: {s.mutants} mutants, {s.stillborn} refused at load, {s.equivalent} equivalent, "
        f"{live} non-equivalent"
    )
    ok = True
    for entry in ("run ci", "plugin") if plugin else ("run ci",):
        print(
            f"  killed by {entry}: {s.killed[entry]}/{live}"
            + (f"; survivors: {', '.join(s.survivors[entry])}" if s.survivors[entry] else "")
        )
        ok &= not s.survivors[entry]
    for k, xs in sorted(s.seconds.items()):
        print(f"  {k}: {sum(xs) / len(xs):.1f}s per mutant (max {max(xs):.1f}s)")
    return ok


def releases_section(releases: list[str]) -> bool:
    """The unmutated releases: run ci's groups against prove's (the full space)."""
    ok = True
    for release in releases:
        spec = f"sglang=={release}"
        t0 = time.monotonic()
        ran = ci_groups(spec)
        t1 = time.monotonic()
        proved = prove_groups(spec, "full")
        t2 = time.monotonic()
        missed, beyond = proved - ran, ran - proved
        ok &= not missed
        print(
            f"{release}: run ci {len(ran)} groups ({t1 - t0:.1f}s), prove {len(proved)} ({t2 - t1:.1f}s)"
            + (f"; MISSED by ci: {', '.join(sorted(missed))}" if missed else "; ci holds every proved group")
            + (f"; beyond prove's scope: {', '.join(sorted(beyond))}" if beyond else ""),
            flush=True,
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="0.5.18,0.5.23,main")
    p.add_argument("--limit", type=int, default=None, help="mutants per shape, sampled with --seed (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-plugin", action="store_true", help="skip the plugin line (the slowest verdict)")
    p.add_argument("--releases", default=None, metavar="RANGE", help="also compare run ci with prove per release")
    args = p.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="kvrow-mutants-") as tmp:
        for shape in [s for s in args.shapes.split(",") if s]:
            if shape not in ("main", *PAGE_1_FIX):
                raise SystemExit(f"unknown shape {shape!r}: 0.5.18, 0.5.23 or main")
            ok &= print_score(
                score_shape(shape, args.limit, args.seed, not args.no_plugin, Path(tmp)), not args.no_plugin
            )
    if args.releases:
        from fuzz.fidelity.matrix import parse_releases

        ok &= releases_section(parse_releases(args.releases))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

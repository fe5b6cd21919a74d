"""Mutation score: is every quick verdict as strong as the bounded proof? Mutants of clean sizing files, judged.

    python benchmarks/mutation_score.py [--shapes 0.5.18,0.5.23,main] [--limit N] [--seed S] [--jobs N]
                                        [--results FILE] [--no-plugin] [--releases 0.5.16..0.5.23]

Bases, one per API shape, each as clean as its release's known bugs allow:
``0.5.18`` (0.5.16-0.5.18's accessors shape) and ``0.5.23`` (0.5.19-0.5.23's
alloc-page/UNO shape) from the real wheels in the tool's cache, with the
page-1 headroom (#33579) fixed; ``main`` from ``tests/sglang_shapes/main.py``.
``mutator.mutants`` changes one point of one sizing function at a time.

Equivalence is decided by ``prove --space small``, then the full space on
its survivors only: a mutant neither proof finds a bug group in beyond the
base's is equivalent (and no quick verdict is asked of it). A non-equivalent
mutant is *killed* by an entry point when it reports a root cause the base
does not have (``fuzz.causes``; the base's causes written as a baseline):
``run --profile ci`` (in process, the model's write path), the campaign's
findings grouped by root cause and judged against that baseline, counted
also by whether a new cause names the mutated function; the pytest plugin
line (``pytest --pyargs fuzz.properties --kvrow-target=FILE@VERSION
--kvrow-baseline BASE -x``, a subprocess, as a user types it plus the
baseline): it fails. ``-x`` stops at the first failing test, so the plugin's
verdict (fails or passes) is the full line's and its seconds are the time to
that verdict.

Every verdict is appended to ``--results`` (JSON lines, fsynced) as it
comes: a killed or interrupted run resumes where it stopped, and a mutant
(keyed by its source's digest and its base's) is never judged twice.
``--jobs N`` judges N mutants at a time (worker processes, one thread each).

``--releases``: the unmutated releases, ``run --profile ci``'s groups against
``prove``'s: a group ``run`` reports that ``prove`` does not is a false alarm
of the quick verdict or a finding outside prove's scope, printed as such.
Exit 1 when a non-equivalent mutant survives an entry point, or a release's
ci groups miss a proved group; 130 when interrupted (what was judged stays).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")  # --jobs workers share the cores: one thread each

from mutation_results import Results, base_key, mutant_key, print_score  # noqa: E402
from mutator import Mutant, mutants  # noqa: E402

MAIN_SHAPE = ROOT / "tests" / "sglang_shapes" / "main.py"
PAGE_1_FIX = {  # #33579 fixed as the reference states it: the reserve term at every allocator page
    "0.5.18": (
        "    if get_spec().speculative_algorithm is not None and page_size > 1:\n",
        "    if get_spec().speculative_algorithm is not None:\n",
    ),
    "0.5.23": ("        if page_size > 1 or spec_algo.is_uno():\n", "        if True:\n"),
}


# -- verdicts (run in the worker processes) --------------------------------------------------------------------


def prove_result(spec: str, space: str) -> Any:
    from fuzz.prove.request import request
    from fuzz.prove.sweep import prove
    from fuzz.targets import resolve_target

    target = resolve_target(spec)
    return prove(target, request(target, space))


def ci_findings(spec: str) -> tuple[Any, list[Any], str]:
    """(target, findings, error) of ``run --profile ci``: its proof stage, then the profile's search."""
    from fuzz.common.profiles import get_profile
    from fuzz.prove.quick import proof_stage
    from fuzz.run.engine import campaign
    from fuzz.run.sglang import WritePathMode
    from fuzz.targets import resolve_target

    target = resolve_target(spec)
    result = campaign(target, get_profile("ci"), proof=proof_stage, write_path=WritePathMode.MODEL)
    return target, list(result.findings), result.error or ""


def plugin_fails(spec: str, baseline_file: str | None) -> tuple[bool, str]:
    """Whether the plugin line fails on ``spec`` (against the base's causes), and its last line."""
    import subprocess

    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += ["--pyargs", "fuzz.properties", f"--kvrow-target={spec}", "-o", "addopts=", "--tb=line"]
    command += [f"--kvrow-baseline={baseline_file}"] if baseline_file else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=900, env=env)
    last = (done.stdout.strip().splitlines() or [""])[-1][:160]
    if done.returncode not in (0, 1):
        raise RuntimeError(f"the plugin line exited {done.returncode}: {last} {done.stderr[-300:]}")
    return done.returncode == 1, last


def judge_base(spec: str, plugin: bool, baseline_file: str) -> dict[str, Any]:
    """The base's groups by each proof and by run ci, its root causes written to ``baseline_file``; the plugin
    line must pass against them (else the kill rule would be void)."""
    from fuzz.causes import root_causes
    from fuzz.findings import baseline

    seconds: dict[str, float] = {}
    t = time.monotonic()
    small = prove_result(spec, "small")
    seconds["prove small"] = time.monotonic() - t
    t = time.monotonic()
    full = prove_result(spec, "full")
    seconds["prove full"] = time.monotonic() - t
    t = time.monotonic()
    target, found, error = ci_findings(spec)
    if error:
        raise RuntimeError(f"run ci failed on the base {spec}: {error}")
    causes = root_causes(target, [*found, *(g.witness for g in full.groups.values())])
    seconds["run ci"] = time.monotonic() - t
    Path(baseline_file).write_text(baseline.text(target.spec, causes))
    record: dict[str, Any] = {
        "prove small": sorted(map(str, small.groups)),
        "prove full": sorted(map(str, full.groups)),
        "run ci": sorted({str(f.signature) for f in found}),
        "causes": [c.label for c in causes],
        "baseline": Path(baseline_file).read_text(),
    }
    if plugin:
        t = time.monotonic()
        failed, last = plugin_fails(spec, baseline_file)
        seconds["plugin"] = time.monotonic() - t
        if failed:
            raise RuntimeError(f"the plugin line fails on the base {spec} against its own causes: {last}")
    return {**record, "seconds": seconds}


def base_or_error(spec: str, plugin: bool, baseline_file: str) -> dict[str, Any]:
    """``judge_base``, or ``{"error": ...}``: a base that cannot be judged stops its shape, not the run."""
    try:
        return judge_base(spec, plugin, baseline_file)
    except Exception as e:  # noqa: BLE001 - reported as the shape's one line
        return {"error": f"{type(e).__name__}: {e}"[:400]}


def names(cause: Any, function: str) -> bool:
    """Whether a root cause names ``function``: the surface entry it is keyed by mirrors it, or the code it lives
    in is it."""
    from allocator_model.surface import ROW_WIDTH, entries
    from fuzz.targets.sglang.real import ROW_WIDTH_FUNCTION

    mirrors = {f for e in entries() if e.name == cause.key for f in e.functions}
    mirrors |= {ROW_WIDTH_FUNCTION} if cause.key == ROW_WIDTH.name else set()
    located = [f for _, f in cause.code] + [w.rsplit(" ", 1)[-1] for w in cause.where]
    return function in mirrors or any(f.split(".")[-1] == function for f in located)


def judge_mutant(spec: str, m: Mutant, base: dict[str, Any], plugin: bool, baseline_file: str) -> dict[str, Any]:
    """``verdicts``, and ``crashed`` (a traceback out of kvrow-fuzz itself: a defect of the tool, listed) when
    one of them raised."""
    import traceback

    try:
        return verdicts(spec, m, base, plugin, baseline_file)
    except Exception as e:  # noqa: BLE001 - any exception here is the tool's own crash, recorded and listed
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return {"outcome": "crashed", "why": f"{type(e).__name__}: {e} at {tb.filename}:{tb.lineno}"[:300]}


def verdicts(spec: str, m: Mutant, base: dict[str, Any], plugin: bool, baseline_file: str) -> dict[str, Any]:
    """A mutant's verdicts: ``equivalent`` (neither proof finds a group the base's does not) or, for the
    others, the new groups proved, run ci's new root causes (and whether one names the mutated function),
    the plugin line's failure; ``refused`` when the loader refuses the file (no verdict)."""
    from fuzz.causes import root_causes
    from fuzz.findings import baseline
    from fuzz.targets.base import TargetError

    seconds: dict[str, float] = {}
    out: dict[str, Any] = {"seconds": seconds}
    try:
        t = time.monotonic()
        new = sorted(set(map(str, prove_result(spec, "small").groups)) - set(base["prove small"]))
        seconds["prove small"] = time.monotonic() - t
        if not new:
            t = time.monotonic()
            new = sorted(set(map(str, prove_result(spec, "full").groups)) - set(base["prove full"]))
            seconds["prove full"] = time.monotonic() - t
    except TargetError as e:
        return {**out, "outcome": "refused", "why": str(e).splitlines()[0][:160]}
    if not new:
        return {**out, "outcome": "equivalent"}
    out.update(outcome="judged", proof=new)
    t = time.monotonic()
    target, found, error = ci_findings(spec)
    known = baseline.load(baseline_file).entries
    fresh = baseline.judge(root_causes(target, found), known).new
    seconds["run ci"] = time.monotonic() - t
    out["run ci"] = {
        "killed": bool(fresh) or bool(error),
        "named": any(names(c, m.function) for c in fresh),
        "causes": [c.label for c in fresh] + ([f"error: {error[:80]}"] if error else []),
    }
    if plugin:
        t = time.monotonic()
        failed, last = plugin_fails(spec, baseline_file)
        seconds["plugin"] = time.monotonic() - t
        out["plugin"] = {"killed": failed, "last": last}
    return out


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


# -- bases and the run -----------------------------------------------------------------------------------------


def base_source(shape: str) -> tuple[str, str]:
    """(source, version) of the clean base of ``shape``: main's from the tests, a release's from its wheel (the
    tool's cache; fetched once if absent) with the page-1 headroom fixed."""
    if shape == "main":
        return MAIN_SHAPE.read_text(), ""
    from fuzz.targets.sglang.wheels import read_from_wheel, release_wheel

    text = read_from_wheel(release_wheel(shape))
    old, new = PAGE_1_FIX[shape]
    if text.count(old) != 1:
        raise SystemExit(f"sglang {shape}'s sizing file no longer has the page-1 condition {old!r}")
    return text.replace(old, new), shape


def spec_of(path: Path, version: str) -> str:
    return f"{path}@{version}" if version else str(path)


@dataclass
class Shape:
    name: str
    version: str
    source: str
    chosen: list[Mutant]
    dir: Path

    @property
    def key(self) -> str:
        return base_key(self.source)

    def baseline_file(self) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        return str(self.dir / "base-causes.json")

    def write(self, where: str, source: str) -> str:
        path = self.dir / where / "allocation_sizing.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        return spec_of(path, self.version)


def shapes(names_: list[str], limit: int | None, seed: int, work: Path) -> list[Shape]:
    out = []
    for name in names_:
        if name not in ("main", *PAGE_1_FIX):
            raise SystemExit(f"unknown shape {name!r}: 0.5.18, 0.5.23 or main")
        source, version = base_source(name)
        every = mutants(source)
        chosen = random.Random(seed).sample(every, min(limit, len(every))) if limit else every
        out.append(Shape(name, version, source, chosen, work / name))
    return out


def in_turn(pool: Any, tasks: list[tuple[Any, tuple[Any, ...]]]) -> Iterator[tuple[int, Any]]:
    """(index into ``tasks``, result) of each ``(fn, args)`` as it finishes: in the pool, else here one by one."""
    if pool is None:
        for i, (fn, args) in enumerate(tasks):
            yield i, fn(*args)
        return
    futures = {pool.submit(fn, *args): i for i, (fn, args) in enumerate(tasks)}
    for f in cf.as_completed(futures):
        yield futures[f], f.result()


def judge_all(todo: list[Shape], results: Results, plugin: bool, jobs: int, seed: int) -> None:
    """Every base, then every mutant not in ``results`` yet (in an order shuffled by ``seed``, so a stopped run
    has judged a sample of every shape), ``jobs`` at a time; each verdict recorded as it comes."""
    pool: Any = (
        cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread)
        if jobs > 1
        else None
    )
    try:
        unjudged = [s for s in todo if results.base(s.name, s.key, plugin) is None]
        for s in unjudged:
            print(f"[{s.name}] base: judging it", flush=True)
        bases = [(base_or_error, (s.write("base", s.source), plugin, s.baseline_file())) for s in unjudged]
        for i, record in in_turn(pool, bases):
            if "error" in record:
                print(f"[{unjudged[i].name}] base: cannot be judged, its mutants are not: {record['error']}")
            else:
                results.add_base(unjudged[i].name, unjudged[i].key, plugin, record)
        tasks: list[tuple[Shape, Mutant, tuple[Any, ...]]] = []
        for s in todo:
            base = results.base(s.name, s.key, plugin)
            if base is None:
                continue
            Path(s.baseline_file()).write_text(base["baseline"])
            print(f"[{s.name}] base: proof {len(base['prove full'])} group(s), causes {base['causes'] or 'none'}")
            for i, m in enumerate(s.chosen, 1):
                if results.mutant(s.key, mutant_key(m.source), plugin) is None:
                    tasks.append((s, m, (s.write(f"m{i}", m.source), m, base, plugin, s.baseline_file())))
        random.Random(seed).shuffle(tasks)
        print(f"{len(tasks)} mutant(s) to judge ({jobs} at a time), the rest in {results.path}", flush=True)
        for n, (i, record) in enumerate(in_turn(pool, [(judge_mutant, t[2]) for t in tasks]), 1):
            s, m, _ = tasks[i]
            record = results.add_mutant(s.name, s.key, m, plugin, record)
            print(f"[{s.name}] {n}/{len(tasks)} {m.name}: {Results.line(record)}", flush=True)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def releases_section(releases: list[str]) -> bool:
    """The unmutated releases: run ci's groups against prove's (the full space)."""
    ok = True
    for release in releases:
        spec = f"sglang=={release}"
        t0 = time.monotonic()
        _, found, _ = ci_findings(spec)
        ran = frozenset(str(f.signature) for f in found)
        t1 = time.monotonic()
        proved = frozenset(map(str, prove_result(spec, "full").groups))
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
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--shapes", default="0.5.18,0.5.23,main")
    p.add_argument("--limit", type=int, default=None, help="mutants per shape, sampled with --seed (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="mutants judged at a time (default 1)")
    p.add_argument(
        "--results",
        default=".kvrow-mutation-results.jsonl",
        metavar="FILE",
        help="verdicts recorded as they come, and read back to resume (default %(default)s)",
    )
    p.add_argument("--no-plugin", action="store_true", help="skip the plugin line (the slowest verdict)")
    p.add_argument("--releases", default=None, metavar="RANGE", help="also compare run ci with prove per release")
    args = p.parse_args(argv)
    if not 1 <= args.jobs <= 64:
        p.error("--jobs: 1 to 64")
    plugin = not args.no_plugin
    results = Results.open(Path(args.results))
    ok = True
    with tempfile.TemporaryDirectory(prefix="kvrow-mutants-") as tmp:
        todo = shapes([s for s in args.shapes.split(",") if s], args.limit, args.seed, Path(tmp))
        try:
            judge_all(todo, results, plugin, args.jobs, args.seed)
        except KeyboardInterrupt:
            print(f"\ninterrupted: what was judged is in {results.path}; the same command resumes", flush=True)
            for s in todo:
                print_score(s.name, s.key, s.chosen, results, plugin)
            return 130
        for s in todo:
            ok &= print_score(s.name, s.key, s.chosen, results, plugin)
    if args.releases:
        from fuzz.fidelity.matrix import parse_releases

        ok &= releases_section(parse_releases(args.releases))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

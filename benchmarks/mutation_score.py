"""Mutation score: is every quick verdict as strong as the bounded proof? Mutants of clean sizing files, judged.

    python benchmarks/mutation_score.py [--shapes 0.5.18,0.5.23,main] [--limit N] [--seed S] [--jobs N]
                                        [--results FILE] [--no-plugin] [--as-released]
                                        [--releases 0.5.16..0.5.23]

Bases, one per API shape, each as clean as its release's known bugs allow:
``0.5.18`` (0.5.16-0.5.18's accessors shape) and ``0.5.23`` (0.5.19-0.5.23's
alloc-page/UNO shape) from the real wheels in the tool's cache, with the
page-1 headroom (#33579) fixed (``--as-released``: left as shipped, so the
base's baseline holds #33579 and a mutant of the function that has it is
judged against a known cause); ``main`` from ``tests/sglang_shapes/main.py``.
``mutator.mutants`` changes one point of one sizing function at a time.

Equivalence is decided by ``prove --space small``, then the full space on
its survivors only: a mutant whose proofs find no group the base's does
not, and none broken in more configurations or by a worse overflow, is
equivalent (and no quick verdict is asked of it); one that only widens a
group the base already breaks is not, one that fixes a known bug is. A non-equivalent
mutant is *killed* by an entry point when it reports a root cause the base
does not have (``fuzz.engines.sglang.causes``; the base's causes written as a baseline):
``run --profile ci`` (in process, the model's write path), the campaign's
findings grouped by root cause and judged against that baseline, counted
also by whether a new cause names the mutated function; the pytest plugin
line (``pytest --pyargs fuzz.properties --kvrow-target=FILE@VERSION
--kvrow-baseline BASE``, a subprocess, as a user types it plus the
baseline): a test that passes on the base fails. The tests that fail on the
base even against its causes (printed on the base's line) are left out
(``-k``), and ``-x`` stops at the first failure, so the verdict is the full
line's and its seconds the time to it. A mutant an entry point tells from
its base only by a new bug group, with no new cause the baseline does not
know, was killed without the baseline and not with it: the baseline hid a
new bug, and the score fails (``HIDDEN BY THE BASELINE``). On a base as
released, a mutant that only widens the base's groups and that no entry
point kills is proved again with the known fix applied: clean, it widens
the known bug only (a larger reserve the fixed headroom would follow), no
new bug, and is listed apart rather than as a survivor.

Every verdict is appended to ``--results`` (JSON lines, fsynced) as it
comes: a killed or interrupted run resumes where it stopped, and a mutant
(keyed by its source's digest and its base's) is never judged twice.
``--jobs N`` judges N mutants at a time (worker processes, one thread each).

``--releases``: the unmutated releases, ``run --profile ci``'s groups (the
write path included) and the plugin line's against ``prove``'s over the full
space: a sizing group ``prove`` does not find is a false alarm; a group outside
prove's scope (``Property.scope``, ``Scope.PROVED``) is labelled so, with
what SGLang's own write path made of it.
Exit 1 when a non-equivalent mutant survives an entry point, or on a release
an entry point misses a proved group, raises a false alarm, or reports a group
outside the proof that SGLang's path does not confirm; 130 when interrupted
(what was judged stays).
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

from mutation_results import ENTRIES, Results, digest, print_score  # noqa: E402
from mutation_verdicts import (  # noqa: E402
    KnownFix,
    base_or_error,
    judge_mutant,
    one_thread,
    plugin_groups,
    prove_result,
    with_fix,
)
from mutator import Mutant, mutants  # noqa: E402

MAIN_SHAPE = ROOT / "tests" / "sglang_shapes" / "main.py"
PAGE_1_FIX = {  # #33579 fixed as the reference states it: the reserve term at every allocator page
    "0.5.18": (
        "    if get_spec().speculative_algorithm is not None and page_size > 1:\n",
        "    if get_spec().speculative_algorithm is not None:\n",
    ),
    "0.5.23": ("        if page_size > 1 or spec_algo.is_uno():\n", "        if True:\n"),
}


# -- bases and the run -----------------------------------------------------------------------------------------


def base_source(shape: str, as_released: bool = False) -> tuple[str, str]:
    """(source, version) of the base of ``shape``: main's from the tests, a release's from its wheel (the
    tool's cache; fetched once if absent) with the page-1 headroom fixed, or as released (its known causes in
    the base's baseline: a mutant in a function with a known cause is judged against it)."""
    if shape == "main":
        return MAIN_SHAPE.read_text(), ""
    from fuzz.engines.sglang.real.wheels import read_from_wheel, release_wheel

    text = read_from_wheel(release_wheel(shape))
    if as_released:
        return text, shape
    fixed = with_fix(text, known_fix(shape))
    if fixed is None:
        raise SystemExit(f"sglang {shape}'s sizing file no longer has the page-1 condition {PAGE_1_FIX[shape][0]!r}")
    return fixed, shape


def known_fix(shape: str) -> KnownFix:
    """#33579's fix on a release's base (``PAGE_1_FIX``), as the verdicts apply it."""
    return ("#33579", *PAGE_1_FIX[shape])


def spec_of(path: Path, version: str) -> str:
    return f"{path}@{version}" if version else str(path)


@dataclass
class Shape:
    name: str
    version: str
    source: str
    chosen: list[Mutant]
    dir: Path
    known_fix: KnownFix | None = None  # a base as released: its known bug's fix (``explained_by``)

    @property
    def key(self) -> str:
        return digest(self.source)

    def baseline_file(self) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        return str(self.dir / "base-causes.json")

    def write(self, where: str, source: str) -> str:
        path = self.dir / where / "allocation_sizing.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        return spec_of(path, self.version)


def shapes(names_: list[str], limit: int | None, seed: int, work: Path, as_released: bool = False) -> list[Shape]:
    out = []
    for name in names_:
        if name not in ("main", *PAGE_1_FIX):
            raise SystemExit(f"unknown shape {name!r}: 0.5.18, 0.5.23 or main")
        source, version = base_source(name, as_released)
        fix = known_fix(name) if as_released and name in PAGE_1_FIX else None
        every = mutants(source)
        chosen = random.Random(seed).sample(every, min(limit, len(every))) if limit else every
        out.append(Shape(name, version, source, chosen, work / name, fix))
    return out


def judged_base(record: dict[str, Any] | None, s: Shape) -> bool:
    """Whether a base record answers this shape: a base as released needs its fixed counts too."""
    return record is not None and (s.known_fix is None or "fixed proof counts" in record)


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
        cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=one_thread)
        if jobs > 1
        else None
    )
    try:
        unjudged = [s for s in todo if not judged_base(results.base(s.name, s.key, plugin), s)]
        for s in unjudged:
            print(f"[{s.name}] base: judging it", flush=True)
        bases = [(base_or_error, (s.write("base", s.source), plugin, s.baseline_file(), s.known_fix)) for s in unjudged]
        for i, record in in_turn(pool, bases):
            if "error" in record:
                print(f"[{unjudged[i].name}] base: cannot be judged, its mutants are not: {record['error']}")
            else:
                results.add_base(unjudged[i].name, unjudged[i].key, plugin, record)
        tasks: list[tuple[Shape, Mutant, tuple[Any, ...]]] = []
        for s in todo:
            base = results.base(s.name, s.key, plugin)
            if base is None or not judged_base(base, s):
                continue
            Path(s.baseline_file()).write_text(base["baseline"])
            fails = f", the plugin line fails {', '.join(base['plugin fails'])}" if base.get("plugin fails") else ""
            print(
                f"[{s.name}] base: proof {len(base['prove full'])} group(s), causes {base['causes'] or 'none'}{fails}"
            )
            for i, m in enumerate(s.chosen, 1):
                if results.mutant(s.key, digest(m.source), plugin) is None:
                    spec = s.write(f"m{i}", m.source)
                    tasks.append((s, m, (spec, m, base, plugin, s.baseline_file(), s.known_fix)))
        random.Random(seed).shuffle(tasks)
        print(f"{len(tasks)} mutant(s) to judge ({jobs} at a time), the rest in {results.path}", flush=True)
        for n, (i, record) in enumerate(in_turn(pool, [(judge_mutant, t[2]) for t in tasks]), 1):
            s, m, _ = tasks[i]
            record = results.add_mutant(s.name, s.key, m, plugin, record)
            print(f"[{s.name}] {n}/{len(tasks)} {m.name}: {Results.line(record)}", flush=True)
    finally:
        if pool is not None:
            for worker in list(getattr(pool, "_processes", {}).values()):  # a worker mid-verdict: stopped, not awaited
                worker.terminate()
            pool.shutdown(wait=False, cancel_futures=True)


def in_proof_scope(signature: str) -> bool:
    """Whether prove decides the group's property (the sizing arithmetic): one it does not find there is a
    false alarm; any other (a lifecycle invariant, what a step's writes did) lies outside the proof."""
    from fuzz.findings.kinds import Scope, Signature

    return Signature.parse(signature).prop.scope is not Scope.SAMPLED


def release_findings(spec: str) -> dict[str, bool | None]:
    """run ci's groups on a release, each with whether SGLang's own write path confirmed it (None: not run
    there): the verdict a user gets, write path included."""
    from fuzz.common.profiles import get_profile
    from fuzz.engines.sglang.decode.engine import campaign
    from fuzz.engines.sglang.own_path import WritePathMode
    from fuzz.engines.sglang.prove.quick import proof_stage
    from fuzz.targets.resolve import resolve_target

    result = campaign(resolve_target(spec), get_profile("ci"), proof=proof_stage, write_path=WritePathMode.AUTO)
    if result.error:
        raise RuntimeError(f"run ci failed on {spec}: {result.error}")
    return {str(f.signature): f.confirmed for f in result.findings}


def compare(entry: str, proved: frozenset[str], ran: dict[str, bool | None], seconds: float) -> tuple[bool, str]:
    """(no false alarm and nothing missed, the line's part) for one entry point's groups against prove's."""
    missed = sorted(proved - set(ran))
    beyond = sorted(set(ran) - proved)
    alarms = [g for g in beyond if in_proof_scope(g)]
    sampled = [g for g in beyond if g not in alarms]
    said: dict[bool | None, str] = {True: " (confirmed on SGLang's path)", False: " (NOT confirmed on SGLang's path)"}
    outside = [g + said.get(ran[g], "") for g in sampled]
    text = f"{entry} {len(ran)} ({seconds:.1f}s, " + (
        f"MISSED: {', '.join(missed)}" if missed else "every proved group"
    )
    text += f", FALSE ALARM (a sizing group prove does not find): {', '.join(alarms)}" if alarms else ""
    text += f", outside prove's scope: {', '.join(outside)}" if outside else ""
    unconfirmed = any(ran[g] is False for g in sampled)
    return not missed and not alarms and not unconfirmed, text + ")"


def releases_section(releases: list[str], plugin: bool) -> bool:
    """The unmutated releases: run ci's groups (write path included), and the plugin line's, against prove's
    over the full space.  A group prove misses is a miss; a sizing group prove does not find is a false alarm;
    a group outside the proof's scope is labelled so, with what SGLang's own write path made of it."""
    ok = True
    for release in releases:
        spec = f"sglang=={release}"
        t0 = time.monotonic()
        proved = frozenset(map(str, prove_result(spec, "full").groups))
        line = [f"{release}: prove {len(proved)} groups ({time.monotonic() - t0:.1f}s)"]
        for entry in ENTRIES if plugin else ENTRIES[:1]:
            t = time.monotonic()
            ran = release_findings(spec) if entry == "run ci" else dict.fromkeys(plugin_groups(spec))
            good, text = compare(entry, proved, ran, time.monotonic() - t)
            ok &= good
            line.append(text)
        print("; ".join(line), flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument(
        "--shapes",
        default="0.5.18,0.5.23,main",
        help="the clean bases to mutate, comma-separated; empty for none (default %(default)s)",
    )
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
    p.add_argument(
        "--as-released",
        action="store_true",
        help="the releases' bases as released, their known bugs (#33579) in the base's baseline (default: fixed)",
    )
    p.add_argument(
        "--releases",
        default=None,
        metavar="RANGE",
        help="also judge run ci and the plugin line against prove on each release (e.g. 0.5.13..0.5.23)",
    )
    args = p.parse_args(argv)
    if not 1 <= args.jobs <= 64:
        p.error("--jobs: 1 to 64")
    plugin = not args.no_plugin
    results = Results.open(Path(args.results))
    ok = True
    with tempfile.TemporaryDirectory(prefix="kvrow-mutants-") as tmp:
        todo = shapes([s for s in args.shapes.split(",") if s], args.limit, args.seed, Path(tmp), args.as_released)
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
        from fuzz.engines.sglang.fidelity.matrix import parse_releases

        ok &= releases_section(parse_releases(args.releases), plugin)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

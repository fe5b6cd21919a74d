"""The mutation benchmark's verdicts, each run in a worker process: the proofs, ``run --profile ci``, the plugin line.

A base's verdict (``judge_base``) is its groups by each proof and by run ci,
and its root causes, written as the baseline its mutants are judged
against; a mutant's (``judge_mutant``) is ``equivalent``, ``refused`` (the
loader refuses it), ``judged`` (the new groups proved, run ci's new root
causes and whether one names the mutated function, the plugin line's failed
tests among those that pass on the base) or ``crashed`` (a traceback out of
kvrow-fuzz itself).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mutation_results import ENTRIES, EQUIVALENCE
from mutator import Mutant

ROOT = Path(__file__).resolve().parents[1]
KnownFix = tuple[str, str, str]  # (its label, the text it replaces, the fixed text): a base as released, fixed


def prove_result(spec: str, space: str) -> Any:
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove
    from fuzz.targets.resolve import resolve_target

    target = resolve_target(spec)
    return prove(target, request(target, space))


def proof_counts(result: Any) -> dict[str, list[int | None]]:
    """Each group a proof found, with how many configurations break it and its worst (columns past the end)."""
    return {str(sig): [g.configurations, g.worst] for sig, g in result.groups.items()}


def changed(counts: dict[str, list[int | None]], base: dict[str, list[int | None]]) -> list[str]:
    """The groups of a mutant's proof that break more than its base's: a group the base does not have, or one
    with more configurations or a worse overflow (a mutant that only widens a group the base already breaks is a
    new bug too: in the function with a known cause, the case a baseline keyed by place let through). Fewer, or
    none (a mutant that fixes a known bug, ``page_size > 1`` made ``>= 1``), is no new bug to find."""
    out = []
    for sig, (n, worst) in sorted(counts.items()):
        if sig not in base:
            out.append(sig)
            continue
        base_n, base_worst = base[sig]
        if (n or 0) > (base_n or 0) or (worst or 0) > (base_worst or 0):
            out.append(f"{sig} ({n} configurations, worst {worst}; the base: {base_n}, worst {base_worst})")
    return out


def ci_findings(spec: str) -> tuple[Any, list[Any], str]:
    """(target, findings, error) of ``run --profile ci``: its proof stage, then the profile's search."""
    from fuzz.common.profiles import get_profile
    from fuzz.engines.sglang.decode.engine import campaign
    from fuzz.engines.sglang.own_path import WritePathMode
    from fuzz.engines.sglang.prove.quick import proof_stage
    from fuzz.targets.resolve import resolve_target

    target = resolve_target(spec)
    result = campaign(target, get_profile("ci"), proof=proof_stage, write_path=WritePathMode.MODEL)
    return target, list(result.findings), result.error or ""


def plugin_line(
    spec: str, baseline_file: str | None, first_failure: bool, skip: tuple[str, ...] = ()
) -> tuple[list[str], str]:
    """(the tests that failed, the output) of the plugin line on ``spec``: ``-x`` with ``first_failure``, the
    tests named in ``skip`` deselected."""
    import re
    import subprocess

    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += ["-o", "addopts=", "--pyargs", "fuzz.properties", f"--kvrow-target={spec}", "--tb=short"]
    command += ["-x"] if first_failure else []
    command += [f"--kvrow-baseline={baseline_file}"] if baseline_file else []
    command += ["-k", " and ".join(f"not {t}" for t in skip)] if skip else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        timeout=900,
        env=env,
        preexec_fn=_default_sigint,
    )
    if done.returncode not in (0, 1):
        last = (done.stdout.strip().splitlines() or [""])[-1][:160]
        raise RuntimeError(f"the plugin line exited {done.returncode}: {last} {done.stderr[-300:]}")
    failed = re.findall(r"^(?:FAILED|ERROR) \S*?::(test_\w+)", done.stdout, re.MULTILINE)
    if done.returncode == 1 and not failed:
        raise RuntimeError(f"the plugin line exited 1 and named no failed test: {done.stdout[-300:]}")
    return sorted(set(failed)), done.stdout


def plugin_groups(spec: str) -> frozenset[str]:
    """The bug groups the whole plugin line's failures name (``WITNESS <group> on`` and ``<group> on <spec>``)."""
    import re

    from fuzz.findings.kinds import Signature

    found = set()
    out = plugin_line(spec, None, first_failure=False)[1]
    for m in re.finditer(r"(?:WITNESS )?([a-z][a-z-]*/\S+?) on \S", out):
        try:
            found.add(str(Signature.parse(m.group(1))))
        except ValueError:
            continue
    return frozenset(found)


def judge_base(spec: str, plugin: bool, baseline_file: str, known_fix: KnownFix | None = None) -> dict[str, Any]:
    """The base's groups by each proof and by run ci, its root causes (of both) written to ``baseline_file``, the
    tests of the plugin line that fail on it even against them (``plugin fails``: no verdict on a mutant), and
    the groups the plugin line names on it without a baseline (``plugin groups``)."""
    from fuzz.findings import baseline
    from fuzz.verdict import PIPELINE

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
    causes = PIPELINE.causes(target, [*found, *(g.witness for g in full.groups.values())])
    seconds["run ci"] = time.monotonic() - t
    Path(baseline_file).write_text(baseline.text(baseline.portable_target(target), causes))
    record: dict[str, Any] = {
        "prove small": sorted(map(str, small.groups)),
        "prove full": sorted(map(str, full.groups)),
        "proof counts": {"small": proof_counts(small), "full": proof_counts(full)},
        "run ci": sorted({str(f.signature) for f in found}),
        "causes": [c.label for c in causes],
        "baseline": Path(baseline_file).read_text(),
    }
    if known_fix is not None:  # a base as released: what it breaks with its known bug fixed (``explained_by``)
        t = time.monotonic()
        fixed_source = with_fix(Path(str(spec).partition("@")[0]).read_text(), known_fix)
        if fixed_source is None:
            raise RuntimeError(f"the base no longer holds the text {known_fix[0]}'s fix replaces")
        fixed = beside(spec, "fixed.py", fixed_source)
        record["fixed proof counts"] = {space: proof_counts(prove_result(fixed, space)) for space in ("small", "full")}
        seconds["the known fix"] = time.monotonic() - t
    if plugin:
        t = time.monotonic()
        record["plugin fails"], _ = plugin_line(spec, scoped_to(baseline_file, target), first_failure=False)
        record["plugin groups"] = sorted(plugin_groups(spec))
        seconds["plugin"] = time.monotonic() - t
    return {**record, "seconds": seconds}


def base_or_error(spec: str, plugin: bool, baseline_file: str, known_fix: KnownFix | None = None) -> dict[str, Any]:
    """``judge_base``, or ``{"error": ...}``: a base that cannot be judged stops its shape, not the run."""
    try:
        return judge_base(spec, plugin, baseline_file, known_fix)
    except Exception as e:  # noqa: BLE001 - reported as the shape's one line
        return {"error": f"{type(e).__name__}: {e}"[:400]}


def names(cause: Any, function: str) -> bool:
    """Whether a root cause names ``function``: the surface entry it is keyed by mirrors it, or the code it lives
    in is it."""
    from allocator_model.surface import ROW_WIDTH, entries
    from fuzz.engines.sglang.real.real import ROW_WIDTH_FUNCTION

    mirrors = {f for e in entries() if e.name == cause.key for f in e.functions}
    mirrors |= {ROW_WIDTH_FUNCTION} if cause.key == ROW_WIDTH.name else set()
    located = [f for _, f in cause.code] + [w.rsplit(" ", 1)[-1] for w in cause.where]
    return function in mirrors or any(f.split(".")[-1] == function for f in located)


def judge_mutant(
    spec: str, m: Mutant, base: dict[str, Any], plugin: bool, baseline_file: str, known_fix: KnownFix | None = None
) -> dict[str, Any]:
    """``verdicts``, and ``crashed`` (a traceback out of kvrow-fuzz itself: a defect of the tool, listed) when
    one of them raised."""
    import traceback

    try:
        return verdicts(spec, m, base, plugin, baseline_file, known_fix)
    except Exception as e:  # noqa: BLE001 - any exception here is the tool's own crash, recorded and listed
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return {"outcome": "crashed", "why": f"{type(e).__name__}: {e} at {tb.filename}:{tb.lineno}"[:300]}


def scoped_to(baseline_file: str, target: Any) -> str:
    """A copy of the base's baseline naming the mutant as its target, beside the mutant: a baseline suppresses
    only on the target it names, and a mutant is the base's code changed, judged against the base's causes."""
    from fuzz.findings import baseline

    doc = json.loads(Path(baseline_file).read_text())
    mine = Path(str(target.spec).partition("@")[0]).with_suffix(".baseline.json")
    name = baseline.portable_target(target, cwd=tempfile.gettempdir())  # as the plugin line (run there) names it
    mine.write_text(baseline.dumps({**doc, "target": name}))
    return str(mine)


def verdicts(
    spec: str, m: Mutant, base: dict[str, Any], plugin: bool, baseline_file: str, known_fix: KnownFix | None = None
) -> dict[str, Any]:
    """A mutant's verdicts: ``equivalent`` (neither proof finds a group the base's does not, or one broken more
    widely: ``changed``) or, for the others, the new or widened groups proved, run ci's new root causes (and
    whether one names the mutated function), the plugin line's failure; ``refused`` when the loader refuses the
    file (no verdict)."""
    from fuzz.findings import baseline
    from fuzz.targets.base import TargetError
    from fuzz.verdict import PIPELINE

    seconds: dict[str, float] = {}
    out: dict[str, Any] = {"seconds": seconds}
    counts = base["proof counts"]
    try:
        t = time.monotonic()
        new = changed(proof_counts(prove_result(spec, "small")), counts["small"])
        seconds["prove small"] = time.monotonic() - t
        if not new:
            t = time.monotonic()
            new = changed(proof_counts(prove_result(spec, "full")), counts["full"])
            seconds["prove full"] = time.monotonic() - t
    except TargetError as e:
        return {**out, "outcome": "refused", "why": str(e).splitlines()[0][:160]}
    if not new:
        return {**out, "outcome": "equivalent", "equivalence": EQUIVALENCE}
    out.update(outcome="judged", proof=new)
    t = time.monotonic()
    target, found, error = ci_findings(spec)
    fresh = PIPELINE.judge(PIPELINE.causes(target, found), baseline.load(baseline_file).entries).new  # the base's
    groups = sorted({str(f.signature) for f in found} - set(base["run ci"]))
    seconds["run ci"] = time.monotonic() - t
    out["run ci"] = {
        **killed_by("cause" if fresh or error else "group" if groups else None),
        "named": any(names(c, m.function) for c in fresh),
        "causes": [c.label for c in fresh] + ([f"error: {error[:80]}"] if error else []),
        "groups": groups[:8],
    }
    if plugin:
        t = time.monotonic()
        skip = tuple(base["plugin fails"])  # failing on the base too: no verdict on a mutant
        failed, _ = plugin_line(spec, scoped_to(baseline_file, target), first_failure=True, skip=skip)
        groups = [] if failed else sorted(plugin_groups(spec) - set(base["plugin groups"]))
        seconds["plugin"] = time.monotonic() - t
        out["plugin"] = {**killed_by("test" if failed else "group" if groups else None), "failed": failed}
        out["plugin"] |= {"skipped": list(skip), "groups": groups[:8]}
    widened_only = all(" (" in g for g in new)
    if known_fix is not None and widened_only and not any(out[e]["killed"] for e in ENTRIES if e in out):
        t = time.monotonic()
        out["explained"] = explained_by(spec, m, known_fix, base["fixed proof counts"])
        seconds["the known fix"] = time.monotonic() - t
    return out


def with_fix(source: str, known_fix: KnownFix) -> str | None:
    """``source`` with the known fix applied (its text replaced, once), or None where that text is not there once
    (a mutant that rewrote it)."""
    _, old, new = known_fix
    return source.replace(old, new) if source.count(old) == 1 else None


def beside(spec: str, name: str, source: str) -> str:
    """The spec of ``source`` written as ``name`` beside the file ``spec`` names, at the same version."""
    file, at, version = str(spec).partition("@")
    path = Path(file).with_name(name)
    path.write_text(source)
    return f"{path}{at}{version}"


def explained_by(
    spec: str, m: Mutant, known_fix: KnownFix, fixed_counts: dict[str, dict[str, list[int | None]]]
) -> str | None:
    """Whether a mutant that only widens the base's groups widens its known bug and nothing else: with the known
    fix applied to the mutant, neither proof breaks more than the fixed base's (``fixed_counts``, per space: for
    0.5.23 nothing; a release with other known bugs keeps theirs). Its words, or None."""
    fixed_source = with_fix(m.source, known_fix)
    if fixed_source is None:
        return None
    fixed = beside(spec, "with_the_fix.py", fixed_source)
    for space in ("small", "full"):
        if changed(proof_counts(prove_result(fixed, space)), fixed_counts[space]):
            return None
    return f"{known_fix[0]}'s: with its fix the mutant breaks no more than the fixed base (small and full spaces)"


def killed_by(how: str | None) -> dict[str, Any]:
    """How an entry point killed a mutant: ``cause`` (a root cause the base's baseline does not know), ``test``
    (a plugin test that passes on the base fails), ``group`` (neither, but a bug group the base's verdict by the
    same entry point does not have: killed without the baseline, and the baseline hid it, the false clean a
    baseline keyed by root cause exists to prevent; ``print_score`` fails on it); None: it survived."""
    return {"killed": how is not None, "by": how}


def one_thread() -> None:
    """A worker's set-up: one torch thread, and Ctrl-C left to the main process (it stops the workers)."""
    import signal

    import torch

    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # the plugin line stops on Ctrl-C, though its worker ignores it

"""A campaign on several cores (``--jobs``) and several machines (``--shard``): streams, workers, one result.

A campaign's work is split into K *streams*; stream k has its own seed
(``derive_seed``: the campaign's seed for k = 0, a hash of it and k
otherwise), its share of the examples per round (``share``: the K shares
sum to the campaign's ``max_examples``) and its share of the covering set
(every K-th case from the k-th).  ``--shard I/N`` with ``--jobs J`` runs the
J streams k = I-1, I-1+N, ... of K = N x J (``plan_streams``): the N shards
together run every stream once, whatever machine runs which.

Each stream of a multi-stream run is a task of the one worker pool
(``fuzz.common.workers``: spawned processes) running the ordinary driver; all of them use the same
example database directory.  A worker writes a group's case file itself,
the moment its search meets the group, if it is the first worker to claim
the group (an ``O_EXCL`` file per group in a directory the parent makes:
first writer wins, one case file per group); it reports only the groups it
claimed, and a group another worker claimed counts as found (passing), so
no two workers shrink the same group.  The parent folds what the workers send into ONE ``CampaignResult``
(``fold``): examples summed, findings one per group, counts merged
(``merge_stats``), and the streams' seeds.  Ctrl-C or SIGTERM reaches the
parent, which asks every worker to stop (SIGTERM: the worker stops at its
next example and sends what it found); a second one kills them.  A worker
that dies unasked is an error of the target's result, never dropped.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings as Settings

from fuzz.common.shards import WHOLE, Shard
from fuzz.common.workers import DONE, ERROR, Emit, WorkerPool
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Finding
from fuzz.findings.output import save_case

from .driver import CampaignResult, Progress


@dataclass(frozen=True)
class Stream:
    """Stream ``index`` of ``count``: its seed and its examples per round."""

    index: int
    count: int
    seed: int
    max_examples: int

    @property
    def cover_part(self) -> tuple[int, int]:
        """(k, K): this stream runs covering cases k, k + K, ... (the engine's own hunt, ``Engine.hunt``)."""
        return self.index, self.count


def derive_seed(base: int, k: int) -> int:
    """Stream k's seed: ``base`` itself for k = 0 (``--jobs 1`` is the plain campaign), else a hash of both."""
    if k == 0:
        return base
    return int.from_bytes(hashlib.sha256(f"kvrow-fuzz:stream:{base}:{k}".encode()).digest()[:8], "big")


def share(total: int, k: int, count: int) -> int:
    """Stream k's part of ``total`` examples: the ``count`` parts differ by at most one and sum to ``total``
    (each at least 1, so a stream always runs)."""
    return max(1, total // count + (1 if k < total % count else 0))


def plan_streams(base_seed: int, max_examples: int, jobs: int, shard: Shard = WHOLE) -> list[Stream]:
    """The ``jobs`` streams of ``shard``: k = shard offset + N x w for w < jobs, of K = N x jobs in all.

    Shard I takes exactly the streams k with ``shard.takes(k)``, so the N
    shards run each of the K streams once.
    """
    count = shard.count * jobs
    ks = [shard.offset + shard.count * w for w in range(jobs)]
    return [Stream(k, count, derive_seed(base_seed, k), share(max_examples, k, count)) for k in ks]


# fuzz(target, settings, seed, cover_part, pins, options, hooks): a command's campaign on one target
# (a module-level function: workers are spawned, and it travels to them by name).
FuzzCall = Callable[..., CampaignResult]


@dataclass(frozen=True)
class CampaignJob:
    """What a worker needs to run its stream of one target's campaign: all of it plain, picklable data."""

    fuzz: FuzzCall
    spec: str
    sglang_version: str | None
    profile: str
    pins: dict[str, Any]
    options: dict[str, Any]  # the command's own (lifecycle: steps)
    cases: str


def merge_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of several streams as one: numbers summed, ``max_*`` the maximum, None ignored, the rest the
    first stream's (a kind, a name)."""
    out: dict[str, Any] = {}
    for stats in parts:
        for key, value in stats.items():
            prior = out.get(key)
            if prior is None:
                out[key] = value
            elif value is None or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            elif key.startswith("max_"):
                out[key] = max(prior, value)
            else:
                out[key] = prior + value
    return out


class Claims:
    """First writer wins: a group's case file belongs to the first worker to create its claim (``O_EXCL``)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.mine: set[Signature] = set()
        self.theirs: set[Signature] = set()

    def owns(self, signature: Signature) -> bool:
        """Whether this worker owns the group: it claimed it now or before; another worker's claim stands."""
        if signature in self.mine:
            return True
        if signature in self.theirs:
            return False
        try:
            os.close(os.open(self._path(signature), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            self.theirs.add(signature)
            return False
        self.mine.add(signature)
        return True

    def elsewhere(self, signature: Signature) -> bool:
        """Whether another worker has claimed the group (so this one need not hunt or shrink it)."""
        if signature in self.mine or signature in self.theirs:
            return signature in self.theirs
        if os.path.exists(self._path(signature)):
            self.theirs.add(signature)
            return True
        return False

    def _path(self, signature: Signature) -> str:
        return os.path.join(self.directory, hashlib.sha256(str(signature).encode()).hexdigest()[:32])


def _stream_task(task: tuple[CampaignJob, Stream, str], emit: Emit) -> CampaignResult:
    """One stream in a worker (``fuzz.common.workers``): its campaign, each claimed group saved then sent."""
    import torch

    from fuzz.common.profiles import get_profile
    from fuzz.targets.resolve import resolve_targets

    job, stream, claims_dir = task
    torch.set_num_threads(1)  # the workers are the parallelism: a second thread per worker only spin-waits
    target = resolve_targets([job.spec], job.sglang_version)[0]
    hyp = Settings(get_profile(job.profile), max_examples=stream.max_examples)
    claims = Claims(claims_dir)

    def on_met(f: Finding) -> None:
        if claims.owns(f.signature):
            save_case(f, job.cases)  # findings reach disk first
            emit("met", f)

    def on_finding(f: Finding) -> None:
        if claims.owns(f.signature):
            save_case(f, job.cases)
            emit("final", f)

    def on_progress(p: Progress) -> None:
        emit("progress", (p.examples, p.phase))

    hooks = {"on_met": on_met, "on_finding": on_finding, "on_progress": on_progress, "elsewhere": claims.elsewhere}
    result = job.fuzz(target, hyp, stream.seed, stream.cover_part, job.pins, job.options, hooks)
    result.findings = [f for f in result.findings if f.signature in claims.mine]
    return result


@dataclass
class Fold:
    """What the parent has heard from the workers so far."""

    streams: list[Stream]
    examples: dict[int, int] = field(default_factory=dict)
    found: dict[str, Finding] = field(default_factory=dict)
    results: dict[int, CampaignResult] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    stopped: set[int] = field(default_factory=set)  # ended by our request, without a result

    def result(self, spec: str, seconds: float, interrupted: bool) -> CampaignResult:
        """ONE result: examples summed, one finding per group (the claiming worker's), counts merged."""
        for r in self.results.values():
            self.found.update({str(f.signature): f for f in r.findings})
        ordered = [self.results[k] for k in sorted(self.results)]
        errors = [f"worker {k + 1} of {len(self.streams)}: {e}" for k, e in sorted(self._numbered().items())]
        # A worker whose campaign ended with the target's error (its result, not a crash) is an error too:
        # the merged run must not read clean.
        position = {st.index: i for i, st in enumerate(self.streams)}
        errors += [
            f"worker {position[k] + 1} of {len(self.streams)}: {r.error}"
            for k, r in sorted(self.results.items())
            if r.error
        ]
        return CampaignResult(
            spec,
            examples=sum(self.examples.values()),
            seconds=seconds,
            findings=sorted(self.found.values(), key=lambda f: str(f.signature)),
            error="; ".join(errors) or None,
            interrupted=interrupted or any(r.interrupted for r in ordered) or bool(self.stopped),
            stats={
                **merge_stats([r.stats for r in ordered]),
                "jobs": len(self.streams),
                "seeds": [s.seed for s in self.streams],
            },
        )

    def _numbered(self) -> dict[int, str]:
        """Errors keyed by the worker's position among this run's streams (1-based in the message)."""
        position = {s.index: i for i, s in enumerate(self.streams)}
        return {position[k]: e for k, e in self.errors.items()}


def run_streams(
    job: CampaignJob,
    streams: list[Stream],
    on_met: Callable[[Finding], None],
    on_finding: Callable[[Finding], None],
    on_progress: Callable[[Progress], None] | None,
    progress_every: float = 2.0,
) -> CampaignResult:
    """Run each stream in a worker process and fold what they send into one result (see the module docstring).

    The hooks run in this process as workers report: a group's case file is
    already on disk when ``on_met`` sees it.
    """
    claims_dir = tempfile.mkdtemp(prefix="kvrow-fuzz-claims-")
    fold = Fold(streams)
    progress = Progress(job.spec, time.monotonic(), on_progress, progress_every)
    phases: dict[int, str] = {}  # each worker's phase, as it last said

    def on_event(i: int, kind: str, payload: Any) -> None:
        k = streams[i].index
        if kind == "progress":
            fold.examples[k], phases[k] = payload
            progress.examples = sum(fold.examples.values())
            progress.enter(", ".join(dict.fromkeys(phases[j] for j in sorted(phases))))  # the workers' phases
            progress.update(progress.examples, len(fold.found))
        elif kind in ("met", "final"):
            fold.found[str(payload.signature)] = payload
            (on_met if kind == "met" else on_finding)(payload)
        elif kind == DONE:
            fold.results[k] = payload
            fold.examples[k] = payload.examples
        elif kind == ERROR:
            fold.errors[k] = payload
        else:
            fold.stopped.add(k)

    try:
        with WorkerPool(_stream_task, [(job, s, claims_dir) for s in streams], len(streams)) as pool:
            pool.run(on_event)
    finally:
        shutil.rmtree(claims_dir, ignore_errors=True)
    return fold.result(job.spec, time.monotonic() - progress.started, interrupted=bool(pool.asked))

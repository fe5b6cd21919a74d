"""SGLang's bounded proof behind ``prove``'s interface (``fuzz.prove.proof``): the sizing sweep, the space's
configurations for the tables' closed forms, the min-slack heatmap.

A ``SGLangProver`` is built from the command's options with every check
made (the algorithm, the device, the heatmap's panel), so ``prove`` refuses
bad input for every target before it sweeps any; its ``sweep`` is the
sweep (``sweep.prove``, in ``--jobs`` processes where asked) followed by
each group's witness replayed through the verdict pipeline
(``witness.confirm``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.pools import KVPool
from fuzz.common.defaults import ALL_ALGORITHMS
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.model import Finding
from fuzz.prove.proof import ProveOptions

from .grid import launch_grid, target_algorithms
from .request import ProveRequest, request
from .result import NO_VIOLATION, ProveResult
from .space import SPACES
from .witness import witness_block, witness_config


def result_entry(r: ProveResult) -> dict[str, Any]:
    """``r``'s entry of the shared report, each finding with its ``group`` (the group's full signature: a witness's
    own may lack the group's outcome; ``merge`` combines the shards by it)."""
    entry = r.to_json()
    for finding, grp in zip(entry["findings"], r.sorted_groups(), strict=True):
        finding["group"] = str(grp.signature)
    return entry


def result_lines(target: SGLangTarget, r: ProveResult) -> list[str]:
    """What was checked and the groups with their counts and worst values (their WITNESS blocks: ``blocks``)."""
    from fuzz.engines import engine_of

    out = [f"== prove {target.spec}: {target.label}"]
    modeled = engine_of(target).modeled_line(target)
    if modeled:  # a real target: what it still takes from the model
        out.append(modeled)
    out.append(f"space {r.space.describe()}")
    calls = sum(r.sizing_calls.values())
    out.append(
        f"method: {r.method}"
        + (
            f" ({calls:,} sizing calls: " + ", ".join(f"{k} {v:,}" for k, v in sorted(r.sizing_calls.items())) + ")"
            if r.sizing_calls
            else ""
        )
    )
    out.append(
        f"checked {r.configurations:,} configurations in {r.seconds:.1f}s: {r.launch_configurations:,} launch "
        f"configurations, {r.decode_shapes:,} with their run-time shapes, x overlap on/off x every residue of "
        f"context_len mod the allocator page, each at its longest committed length"
    )
    if r.trace:
        t = r.trace
        out.append(
            f"traced: {t.configs_traced:,} launch configurations over {t.paths:,} paths of the sizing functions, "
            f"{t.configs_called:,} called one by one (raised, or not traceable)"
            + (
                f"; the sample of plain calls disagreed in {len(t.diverged)} block(s): {', '.join(t.diverged)}"
                if t.diverged
                else ""
            )
        )
    if r.first_error:
        out.append(f"first sizing error: {r.first_error}")
    if not r.groups:
        return [*out, NO_VIOLATION]
    out.append(f"{r.violations:,} violations (a configuration counts once per property it breaks), by bug group:")
    for grp in r.sorted_groups():
        unit = "unrecorded page tail up to" if grp.signature.prop is SGLangProperty.PAGE_ALIGNED_GROWTH else "worst"
        worst = f"  {unit} {grp.worst}" if grp.worst is not None else ""
        out.append(f"  {grp.signature!s:<34} {grp.configurations:>16,}{worst}")
    writes = [g for g in r.groups.values() if g.signature.prop is Property.WRITE_WITHIN_ROW and g.worst is not None]
    if writes:
        top = max(writes, key=lambda g: g.worst or 0)
        out.append(f"worst overshoot: {top.worst} columns past the row end ({top.signature})")
    return out


@dataclass
class SGLangProof:
    """A sweep's result on its target, as ``prove`` prints, saves and reports it."""

    target: SGLangTarget
    result: ProveResult

    @property
    def configurations(self) -> int:
        return self.result.configurations

    @property
    def witnesses(self) -> list[Finding]:
        return [g.witness for g in self.result.sorted_groups()]

    @property
    def saved(self) -> list[Finding]:
        return [g.witness for g in self.result.groups.values() if g.confirmed and not g.mismatch]

    def lines(self) -> list[str]:
        return result_lines(self.target, self.result)

    def blocks(self, signatures: Collection[Signature] | None = None, width: int | None = None) -> list[str]:
        return [
            witness_block(g, width)
            for g in self.result.sorted_groups()
            if signatures is None or g.signature in signatures
        ]

    def entry(self) -> dict[str, Any]:
        return result_entry(self.result)


@dataclass(frozen=True)
class SGLangProver:
    """One target's proof as ``prove`` asked for it, every option checked (``prover``)."""

    target: SGLangTarget
    request: ProveRequest
    jobs: int = 1
    panel: KVPool | None = None  # --heatmap-pool

    @property
    def space(self) -> str:
        return self.request.space.name

    def sweep(self, on_progress: Callable[[str], None] | None = None, *, confirm: bool = True) -> SGLangProof:
        """The sweep (``--jobs`` worker processes where asked), each group's witness confirmed where ``confirm``."""
        from .sweep import prove
        from .witness import confirm as confirm_witnesses

        if self.jobs > 1:
            from .parallel import prove_in_parallel

            if on_progress:
                on_progress(f"[{self.target.spec}] prove: {self.jobs} worker processes, dealt the blocks round-robin")
            result = prove_in_parallel(self.target.spec, self.request, self.jobs, on_progress=on_progress)
        else:
            result = prove(self.target, self.request, on_progress=on_progress)
        if confirm:
            confirm_witnesses(self.target, result)
        return SGLangProof(self.target, result)

    def launch_grids(self, attn_dcp_size: int | None = None) -> Iterator[tuple[Any, Any]]:
        """Each launch grid of the space, in ``configurations``' order, with which of its launch configurations are
        this shard's (a bool tensor): what a table's sweep (``Table.sweep``) takes the space as.

        ``attn_dcp_size``: only each grid's configurations of that DCP size (the grids left empty dropped), built
        once per prover and kept (a sixteenth of the space: every table's sweep reads the same), each with its
        shard's part as the whole grid's numbering gives it."""
        if attn_dcp_size is None:
            yield from self._numbered()
            return
        kept = self.__dict__.setdefault("_grids_at_dcp", {})
        if attn_dcp_size not in kept:
            parts = []
            for g, taken in self._numbered():
                mine = g.attn_dcp_size == attn_dcp_size
                if bool(mine.any()):
                    parts.append((g.select(mine), taken[mine]))
            kept[attn_dcp_size] = parts  # a frozen prover's memo, not a field
        yield from kept[attn_dcp_size]

    def _numbered(self) -> Iterator[tuple[Any, Any]]:
        i = 0
        for g in self._grids():
            shard = self.request.shard
            taken = (torch.arange(i, i + len(g)) % shard.count) == shard.index - 1  # ``Shard.takes``, vectorized
            i += len(g)
            yield g, taken

    def _grids(self) -> Iterator[Any]:
        space = self.request.space
        for a in target_algorithms(self.target, self.request.algorithm):
            for p in space.page_sizes:
                yield launch_grid(space, a, p)

    def configurations(self) -> Iterator[Any]:
        i, shard = -1, self.request.shard
        for g in self._grids():
            pages = (g.page_size * g.attn_dcp_size).tolist()
            for k in range(len(g)):
                i += 1
                if not shard.takes(i):
                    continue
                for overlap in (False, True):
                    kw = witness_config(g, k, pages[k], pages[k] - 1, overlap)
                    longest = ServingConfig.from_dict(kw)  # checked whole once; shorter ones only as lengths
                    for residue in range(pages[k]):
                        yield longest.at_context_len(kw["context_len"] - (pages[k] - 1) + residue)

    def count(self) -> int:
        """The configurations of the space this prover's shard takes: counted once (each table's proof asks)."""
        counted = self.__dict__.get("_counted")
        if counted is None:
            shard, counted, i = self.request.shard, 0, 0
            for g in self._grids():
                pages = g.page_size * g.attn_dcp_size
                taken = (torch.arange(i, i + len(pages)) % shard.count) == shard.offset  # ``Shard.takes``, at once
                counted += 2 * int(pages[taken].sum())
                i += len(pages)
            object.__setattr__(self, "_counted", counted)  # a frozen prover's memo, not a field
        return counted

    def check_heatmap(self) -> None:
        from .heatmap import require_matplotlib

        require_matplotlib()

    def write_heatmap(self, proof: Any, path: str) -> str:
        from .heatmap import pool_panels, write_heatmap

        only = self.request.algorithm
        label = "every algorithm" if only == ALL_ALGORITHMS else (only or "no speculation")
        r = proof.result
        panels = pool_panels(r.pool_heat, f"{label} on {self.target.spec}", self.panel)
        return write_heatmap(path, panels, axes=(r.space.page_sizes, r.space.dcp_sizes))


def prover(target: SGLangTarget, options: ProveOptions) -> SGLangProver:
    """The prover of ``target`` for ``options``; ValueError (one line) for an option it cannot take: an algorithm the
    target's release does not have, a device torch cannot use, a kind of pool that does not exist."""
    from .sweep import require_device

    only = options.algorithm
    if only is not None and only.strip().lower() != ALL_ALGORITHMS:
        only = algo.normalize(only)
    elif only is not None:
        only = ALL_ALGORITHMS
    target_algorithms(target, only)
    device = require_device(options.device)
    panel = None
    if options.heatmap_pool is not None:
        try:
            panel = KVPool(options.heatmap_pool)
        except ValueError:
            known = ", ".join(k.value for k in KVPool)
            raise ValueError(f"unknown kind of KV pool {options.heatmap_pool!r} (known: {known})") from None
    # The full space by default: a real target's functions run once per path (traced), not per configuration.
    space = options.space or ("small" if options.one_by_one and not target.is_model else "full")
    if space not in SPACES:
        raise ValueError(f"unknown space {space!r} (known: {', '.join(sorted(SPACES))})")
    asked = request(
        target,
        space,
        algorithm=only,
        calls=True if options.calls else None,
        traced=not options.one_by_one,
        shard=options.shard,
        device=device,
    )
    return SGLangProver(target, asked, options.jobs, panel)

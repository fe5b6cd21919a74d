"""What ``prove`` asks of an engine: a bounded proof of one target, as the command asked for it.

The command is the core's (its options, the tables' closed forms, the root
causes, the baseline, the report, SARIF); what a bounded space is, how a
target's sizing is swept over it and what a witness is are the engine's
(``Engine.prover``).  A ``Prover`` is built, and its options checked, for
every target before any of them is swept, so bad input is one line before
any work; its ``sweep`` returns the engine's ``SizingProof``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from fuzz.common.defaults import ALL_ALGORITHMS
from fuzz.common.shards import WHOLE, Shard


@dataclass(frozen=True)
class ProveOptions:
    """What ``prove`` hands an engine's prover for one target (its command-line options, as typed)."""

    space: str | None = None  # --space: None, the engine's default for the target
    algorithm: str | None = ALL_ALGORITHMS  # --algorithm: all, one by name, or None (speculation off)
    calls: bool = False  # --calls: a model target's sizing functions called too
    one_by_one: bool = False  # --one-by-one: a real target's sizing called per configuration, not traced
    device: str = "cpu"  # --device
    jobs: int = 1  # --jobs: worker processes
    shard: Shard = WHOLE  # --shard: this slice of the space's launch configurations
    heatmap_pool: str | None = None  # --heatmap-pool: one panel's name (None: every panel with a violation)


class SizingProof(Protocol):
    """One target's swept space: what was checked, the groups found, each group's worst witness."""

    @property
    def witnesses(self) -> list[Any]:
        """Each group's worst configuration as a ``Finding``, in the groups' order (what the causes and SARIF get)."""
        ...

    @property
    def saved(self) -> list[Any]:
        """The witnesses the engine's own model confirmed: written as case files (a disagreement is printed)."""
        ...

    def lines(self) -> list[str]:
        """What ``prove`` prints of it before the root causes: the space, the method, the counts and each group."""
        ...

    def blocks(self, signatures: Any = None, width: int | None = None) -> list[str]:
        """The WITNESS blocks of the groups whose signature is in ``signatures`` (None: every group), each with what
        the engine's model said of it where it disagreed; ``width`` as ``render.counterexample_block`` takes it."""
        ...

    def entry(self) -> dict[str, Any]:
        """The target's entry of the shared report (``fuzz.findings.report``), each finding with its ``group``."""
        ...


class Prover(Protocol):
    """One target's bounded proof, its options checked: the sizing's sweep, the space's configurations (for the
    tables' closed forms) and the heatmap."""

    @property
    def space(self) -> str:
        """The space's name (the option's, or the engine's default for the target)."""
        ...

    def sweep(self, on_progress: Callable[[str], None] | None = None) -> SizingProof:
        """The target's sizing over the space, each group's witness judged by the verdict pipeline."""
        ...

    def configurations(self) -> Iterator[Any]:
        """Every valid configuration of the space (the shard's share), as the engine's ``Config``s: at every residue
        of its context length mod the allocator page, near the witnesses' context length."""
        ...

    def count(self) -> int:
        """How many configurations ``configurations`` yields, without building them."""
        ...

    def check_heatmap(self) -> None:
        """``BadInput`` (one line) where this prover cannot draw a heatmap (matplotlib missing)."""
        ...

    def write_heatmap(self, proof: SizingProof, path: str) -> str:
        """The heatmap of ``proof`` written to ``path`` (a PNG); the markdown table's path beside it."""
        ...

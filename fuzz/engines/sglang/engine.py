"""SGLang as an engine (``fuzz.engines.base.Engine``): its names are declared on load; each other answer imports
the code behind it when asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fuzz.engines.base import LifecycleOptions, RunOptions
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.report import Command, Field
from fuzz.targets.base import TargetKind

from . import cases, dsa_index, names, page_tables, tables  # noqa: F401  (declare SGLang's properties, names, kinds of case, tables on load)
from .specs import NAME, runs_named_code


class SGLangEngine:
    """Claims every spec another engine did not (``reference...``, ``sglang...``, a path): asked last, it is the
    one that calls a spec unknown."""

    name = NAME
    packages = ("allocator_model", "strategies")  # its model and strategies (``load_project_modules`` loads them)
    # What its write path did in a run (``decode.engine`` counts them).
    report_fields = {
        Command.RUN: {
            "write_path": Field.LABEL,
            "sglang_scenarios": Field.COUNT,
            "sglang_decode_steps": Field.COUNT,
            "sglang_seconds": Field.SECONDS,
        }
    }

    @property
    def attributions(self) -> tuple[Any, ...]:
        from .verdict import ATTRIBUTIONS

        return ATTRIBUTIONS

    def confirm(self, target: SGLangTarget, finding: Any, mode: str = "auto", check: Any = None) -> Any:
        from .verdict import confirm

        return confirm(target, finding, mode, check)

    def has_own_path(self, target: SGLangTarget, mode: str = "auto") -> bool:
        from .own_path import WritePathMode, has_sglang_path

        return has_sglang_path(target, WritePathMode(mode))

    def hunt(self, target: SGLangTarget, options: RunOptions) -> Any:
        from fuzz.engines.sglang.prove.quick import proof_stage

        from .decode.engine import DecodeHunt
        from .own_path import WritePathMode

        pins = None if options.pins is None else dict(options.pins)
        return DecodeHunt(
            target,
            pins=pins,
            cover_part=options.cover_part,
            write_path=WritePathMode(options.write_path),
            proof=proof_stage if options.proof else None,
            representative=True,
        )

    @property
    def quick_space(self) -> str:
        from .prove.quick import QUICK_SPACE

        return QUICK_SPACE

    def prover(self, target: SGLangTarget, options: Any) -> Any:
        from .prove.prover import prover

        return prover(target, options)

    def campaign_lines(self, target: SGLangTarget, command: Any, result: Any) -> list[str]:
        if command is Command.RUN:
            from .decode.engine import run_lines
            from .representative import summary_line

            searched = summary_line(result.findings)
            return run_lines(result.stats) + ([searched] if searched else [])
        if command is Command.LIFECYCLE:
            from .lifecycle.machine import lifecycle_lines

            return lifecycle_lines(result)
        return []

    @property
    def fuzzed_properties(self) -> tuple[Any, ...]:
        from .decode.properties import PROPERTIES

        return PROPERTIES

    def fuzzed_draws(self, target: SGLangTarget) -> Any:
        from strategies.scenarios import decode_scenarios

        from .decode import check  # noqa: F401  (imported now, with the draws: the Atheris entry instruments what
        # is imported while it builds its test, and each case is checked by this module and SGLang's own path)

        return decode_scenarios(target.revision)

    def fuzzed_case(self, drawn: Any) -> Any:
        from .decode.check import DecodeCase

        return DecodeCase(drawn)

    def case_score(self, run: Any) -> tuple[float, str] | None:
        from .decode.properties import overshoot

        return None if run is None else (float(overshoot(run)), "overshoot past the row width")

    def lifecycle_hunt(self, target: SGLangTarget, options: LifecycleOptions) -> Any:
        from .lifecycle.machine import lifecycle_hunt

        pins = None if options.pins is None else dict(options.pins)
        own = self.has_own_path(target, options.write_path)  # asked for SGLang's own and it cannot: BadInput
        return lifecycle_hunt(target, steps=options.steps, pins=pins, own_allocator=own)

    def releases(self, text: str | None) -> list[str]:
        from .fidelity.matrix import parse_releases

        return parse_releases(text)  # a VersionError: a ValueError

    def code_paths(self, target: SGLangTarget) -> list[str]:
        from .real.paths import read_paths

        return read_paths(target)

    def root_causes(self, target: SGLangTarget, findings: list[Any]) -> list[Any]:
        from .verdict import root_causes

        return root_causes(target, findings)

    def replayed(self, doc: dict[str, Any], where: str = "the case") -> tuple[SGLangTarget, Any] | None:
        from .causes.advisory import replayed

        return replayed(doc, where)

    def claims(self, spec: str) -> bool:
        return True

    def resolve(self, spec: str, version: str | None = None) -> SGLangTarget:
        from .targets import resolve

        return resolve(spec, version)

    def runs_named_code(self, spec: str) -> bool:
        return runs_named_code(spec)

    def known_targets(self) -> list[tuple[str, str]]:
        from .targets import known_targets

        return known_targets()

    def config_from_dict(self, data: Mapping[str, Any]) -> Any:
        from allocator_model.config import ServingConfig

        return ServingConfig.from_dict(data)  # ConfigError: a ValueError

    def check_pins(self, pins: Mapping[str, Any]) -> None:
        from strategies.space import check_pins

        check_pins(pins)  # ConfigError: a ValueError

    def pins_refused(self, target: SGLangTarget, pins: Mapping[str, Any]) -> str | None:
        """The target's revision's refusal (``Revision.refuses``) of the pinned fields it reads, the others at their
        default (no speculation, the standard pool, DCP 1, not adaptive: each the permissive value of what it
        checks, so every draw with these pins is refused too)."""
        import types

        from allocator_model import algorithms as algo
        from allocator_model.pools import KVPool

        # the fields ``refuses`` reads, as pinned (``check_pins`` checked their values), the others their default;
        # a configuration of the pinned fields alone need not be one (UNO's has no draft-token default)
        try:
            probe: Any = types.SimpleNamespace(
                kv_pool=KVPool(pins.get("kv_pool", KVPool.STANDARD.value)),
                speculative_algorithm=algo.normalize(pins.get("speculative_algorithm")),
                attn_dcp_size=int(pins.get("attn_dcp_size", 1)),
                speculative_adaptive=bool(pins.get("speculative_adaptive", False)),
            )
            refusal = target.revision.refuses(probe)
        except (AttributeError, TypeError, ValueError):  # a field the probe does not hold, a value no pin has
            return None
        return None if refusal is None else f"{target.spec} launches no configuration with these pins: {refusal}"

    def target_class(self, spec: str) -> TargetKind | None:
        from .targets import target_class

        return target_class(spec)

    def printed_target(self, kind: TargetKind, spec: str) -> str | None:
        from .targets import printed_target

        return printed_target(kind, spec)

    def judges(self, target: SGLangTarget, table: str, command: Any, stats: Mapping[str, Any]) -> str | None:
        from .tables import judged_by

        return judged_by(table, command, stats)

    def locations(self, target: SGLangTarget, finding: Any, cwd: str | None = None) -> list[Any]:
        from .locations import locations

        return locations(target, finding, cwd)

    def portable_target(self, target: SGLangTarget, cwd: str | None = None) -> str:
        from .targets import portable_target

        return portable_target(target, cwd)

    def launch_line(self, config: Any, table: str | None = None) -> str | None:
        from .launch import launch_line
        from .page_tables import backend_of

        return launch_line(config, backend_of(table))

    def modeled_line(self, target: SGLangTarget, own_write_path: bool = True) -> str | None:
        from .targets import modeled_line

        return modeled_line(target, own_write_path)


ENGINE = SGLangEngine()

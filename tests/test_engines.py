"""The engine registry: where engines are declared, which one a spec goes to, and an engine that cannot load.

An engine is found by name (built in, an installed package's entry point,
``$KVROW_FUZZ_ENGINES``) and imported only when a spec needs it; one whose
code cannot be imported is named with why, never skipped in silence, and a
spec that needs it is one line and exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import fuzz.engines as registry
from fuzz.common.errors import TargetError
from fuzz.engines import EngineUnavailable, engine_for, engines, load, registered, runs_named_code
from fuzz.targets.base import Target, TargetKind
from fuzz.targets.resolve import known_targets, resolve_case_target, resolve_target

ROOT = Path(__file__).resolve().parents[1]

TOY = textwrap.dedent(
    """
    from fuzz.targets.base import Target, TargetKind

    class Toy:
        name = "toy"
        report_fields = {}

        def claims(self, spec):
            return spec.startswith("toy==")

        def resolve(self, spec, version=None):
            return Target(spec, "a toy", None, None, TargetKind.MODEL, self.name)

        def runs_named_code(self, spec):
            return False

        def known_targets(self):
            return [("toy==1", "the toy allocator")]

        def modeled_line(self, target, own_write_path=True):
            return None

        def config_from_dict(self, data):
            if set(data) != {"rows"}:
                raise ValueError("a toy configuration is {'rows': N}")
            return data

        def check_pins(self, pins):
            if set(pins) - {"rows"}:
                raise ValueError(f"the toy has no field {sorted(set(pins) - {'rows'})[0]}")

        def target_class(self, spec):
            return TargetKind.MODEL if spec == "toy==1" else None

        def printed_target(self, kind, spec):
            return None

    ENGINE = Toy()
    MISNAMED = Toy()
    MISNAMED.name = "other"
    """
)


@pytest.fixture
def toy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "kvrow_toy_engine.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", {})
    monkeypatch.setattr(registry, "_refs", {})
    return "kvrow_toy_engine"


def test_sglang_is_built_in_and_takes_todays_specs_unchanged() -> None:
    assert registry.refs()["sglang"] == "fuzz.engines.sglang.engine:ENGINE"
    for spec in ("reference", "reference@sglang-0.5.18"):
        target = resolve_target(spec)
        assert (target.engine, target.spec) == ("sglang", spec)
    with pytest.raises(TargetError, match="unknown target 'nope'"):
        resolve_target("nope")  # SGLang is asked last and names what nobody claims


def test_a_case_replays_only_on_a_target_of_the_engine_that_declared_its_kind(
    toy_module: str, monkeypatch, tmp_path: Path, capsys
) -> None:
    """An SGLang case naming (or replayed with ``--target``) another engine's target is refused in one line: its
    replayer would be handed a ``Target`` it does not know."""
    from fuzz.cli import main

    monkeypatch.setenv(registry.ENV, f"toy={toy_module}:ENGINE")
    assert resolve_case_target("reference", None, "decode-scenario").engine == "sglang"
    with pytest.raises(
        TargetError, match="'toy==1' is a target of engine toy, and a decode-scenario case is engine sglang's"
    ):
        resolve_case_target("toy==1", None, "decode-scenario")
    with pytest.raises(TargetError, match="a target of engine toy"):
        resolve_case_target("reference", "toy==1", "fidelity-case")
    case = ROOT / "fuzz" / "regressions" / "reference-sglang-0.5.18--write-within-row-dcp-1.json"
    assert main(["repro", str(case), "--target", "toy==1"]) == 2
    err = capsys.readouterr().err
    assert "a case replays only on a target of its own engine" in err and len(err.strip().splitlines()) == 1


def test_an_environment_engine_is_asked_before_the_builtins(toy_module: str, monkeypatch) -> None:
    monkeypatch.setenv(registry.ENV, f"toy={toy_module}:ENGINE")
    assert list(registry.refs()) == ["toy", "sglang"]
    target = resolve_target("toy==1")
    assert (target.engine, target.label) == ("toy", "a toy")
    assert resolve_target("reference").engine == "sglang"
    assert ("toy==1", "the toy allocator") in known_targets()
    assert not runs_named_code("toy==1") and runs_named_code("./allocation_sizing.py")


def test_an_installed_package_declares_an_engine_by_entry_point_but_cannot_take_a_builtin_name(
    toy_module: str, monkeypatch
) -> None:
    declared = [
        EntryPoint("toy", f"{toy_module}:ENGINE", registry.GROUP),
        EntryPoint("sglang", f"{toy_module}:ENGINE", registry.GROUP),  # a package claiming the builtin's name
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep for ep in declared if ep.group == group])
    monkeypatch.setattr(registry, "_refs", {})
    assert registry.refs() == {"toy": f"{toy_module}:ENGINE", "sglang": "fuzz.engines.sglang.engine:ENGINE"}
    assert engine_for("toy==3").name == "toy"


def test_an_engine_that_cannot_load_is_named_with_why(toy_module: str, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "kvrow_broken_engine.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.setenv(
        registry.ENV,
        f"ghost=kvrow_no_such_module:ENGINE, wrong={toy_module}:MISNAMED, broken=kvrow_broken_engine:ENGINE",
    )
    ready, unavailable = engines()
    assert [e.name for e in ready] == ["sglang"]
    assert "failed to import (RuntimeError: boom)" in unavailable["broken"]
    assert "kvrow_no_such_module cannot be imported" in unavailable["ghost"]
    assert "is named 'other', not 'wrong'" in unavailable["wrong"]
    rows = dict(known_targets())
    assert rows["[ghost]"] == f"engine ghost unavailable: {unavailable['ghost']}"
    with pytest.raises(EngineUnavailable, match="engine ghost unavailable"):
        load("ghost")
    assert resolve_target("reference").engine == "sglang"  # the others still work
    with pytest.raises(TargetError, match=r"unknown target 'toy==1'.*engine ghost unavailable"):
        resolve_target("toy==1")  # SGLang cannot take it; the engine that may have is named


def test_a_blocked_engine_makes_its_specs_one_line_and_case_files_count_as_code(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_loaded", {})
    for name in ("fuzz.engines.sglang", "fuzz.engines.sglang.engine"):  # the latter is already imported here
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(TargetError, match=r"no engine takes target 'reference' \(engine sglang unavailable: "):
        resolve_target("reference")
    assert runs_named_code("reference")  # nothing can vouch for it: treated as code
    with pytest.raises(TargetError, match="would run the Python code"):
        resolve_case_target("reference", None, "decode-scenario")


def test_a_malformed_environment_declaration_is_refused_in_one_line(monkeypatch) -> None:
    from fuzz.findings.kinds import Property

    monkeypatch.setenv(registry.ENV, "toy")
    with pytest.raises(TargetError, match=r"KVROW_FUZZ_ENGINES: 'toy' is not NAME=module:attr"):
        registry.refs()
    with pytest.raises(TargetError, match="KVROW_FUZZ_ENGINES"):  # the declaration is blamed, never the name
        Property("nope")


def test_a_registered_engine_is_asked_first_and_only_inside_its_block() -> None:
    class Everything:
        name = "everything"

        def claims(self, spec: str) -> bool:
            return True

        def resolve(self, spec: str, version: str | None = None) -> Target:
            return Target(spec, "claimed", None, None, TargetKind.MODEL, self.name)

    with registered(Everything()):  # type: ignore[arg-type]  # the rest of the interface is not asked here
        assert resolve_target("reference").engine == "everything"
    assert resolve_target("reference").engine == "sglang"


def test_the_command_line_names_a_blocked_engine_and_exits_2(tmp_path) -> None:
    block = (
        "import sys; sys.modules['fuzz.engines.sglang'] = None; from fuzz.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    listed = subprocess.run([sys.executable, "-c", block, "targets"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0 and "[sglang]" in listed.stdout and "engine sglang unavailable" in listed.stdout
    run = subprocess.run(
        [sys.executable, "-c", block, "run", "--target", "reference"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "engine sglang unavailable" in run.stderr, run.stderr
    needing = (  # the engine's own commands (each parses), and a core one that asks the engine (its releases)
        ["fidelity", "--target", "sglang==0.5.18"],
        ["matrix", "--help"],
        ["advisory", "fuzz-cases/", "--out", "advisories"],
        ["advisory", "--help"],
        ["baseline", "write", str(tmp_path / "baseline.json"), "--releases", "0.5.18"],
    )
    for own in needing:
        mine = subprocess.run([sys.executable, "-c", block, *own], capture_output=True, text=True, env=env)
        assert mine.returncode == 2 and mine.stderr.count("\n") == 1, (own, mine.stderr)
        assert "engine sglang unavailable" in mine.stderr, (own, mine.stderr)


def test_an_engine_name_is_a_plain_identifier(monkeypatch) -> None:
    """An engine's name becomes a key of reports and case files: anything but an identifier is refused."""
    for bad in ("Bad-Name=m:E", "a b=m:E", "=m:E"):
        monkeypatch.setenv(registry.ENV, bad)
        with pytest.raises(TargetError, match="is not NAME=module:attr"):
            registry.refs()


def test_two_properties_cannot_share_a_rank() -> None:
    """The rank orders SARIF's rules; a second property at a taken rank is refused, never ordered by import order."""
    from fuzz.findings.kinds import Declaration, Property, Scope

    with pytest.raises(ValueError, match="rank 0 is 'write-within-row'"):
        Property.declare("a-test-property", Declaration(0, Scope.SAMPLED, "a rule", "toy"))
    with pytest.raises(ValueError, match="is not a valid Property"):
        Property("a-test-property")  # nothing was declared


def test_an_engine_declares_its_names_once() -> None:
    """Which names a signature may carry never depends on which declaration ran last: declaring other names for an
    engine that has declared its own is refused; declaring the same again (a module re-imported) is not."""
    from dataclasses import replace

    from fuzz.engines.sglang.names import NAMES
    from fuzz.findings.kinds import declare_names, declared_names

    assert declare_names("sglang", NAMES) is NAMES
    with pytest.raises(ValueError, match="engine 'sglang' has already declared its names"):
        declare_names("sglang", replace(NAMES, guards=frozenset({"a-forged-guard"})))
    assert NAMES in declared_names() and not any("a-forged-guard" in n.guards for n in declared_names())


def test_a_case_kind_declared_again_by_its_own_module_is_the_same_kind(monkeypatch) -> None:
    """An engine's module imported a second time (pytester's in-process runs drop the modules a run imported, so
    the next run imports them again) declares its case kind again: that is the same kind (a second plugin run
    in one process failed every proof with "already declared"); another engine's, or another shape, is refused."""
    import importlib
    import sys

    from fuzz.findings import kinds

    monkeypatch.setattr(kinds, "_CASE_TYPES", dict(kinds._CASE_TYPES))
    monkeypatch.setattr(kinds.CaseKind, "_declared", dict(kinds.CaseKind._declared))
    first = importlib.import_module("fuzz.engines.sglang.cases").SGLangCase.DECODE
    monkeypatch.delitem(sys.modules, "fuzz.engines.sglang.cases")
    again = importlib.import_module("fuzz.engines.sglang.cases").SGLangCase.DECODE
    assert again is first and kinds.case_type("decode-scenario").engine == "sglang"
    fields, replayer = kinds.case_type("decode-scenario").fields, kinds.case_type("decode-scenario").replayer
    with pytest.raises(ValueError, match="'decode-scenario' is already declared by sglang"):
        kinds.declare_case_type("decode-scenario", "toy", fields, replayer)
    with pytest.raises(ValueError, match="'decode-scenario' is already declared by sglang"):
        kinds.declare_case_type("decode-scenario", "sglang", frozenset({"n"}), replayer)


def test_merge_keeps_each_engines_confirmation_under_its_name(toy_module: str, monkeypatch, tmp_path: Path) -> None:
    """A finding's confirmation is written under the name of the engine whose kind of case it is; merge keeps it
    for any engine (it kept ``sglang`` only, and dropped another engine's) and checks it is text."""
    import json

    from fuzz.cli import main
    from fuzz.findings import kinds

    monkeypatch.setenv(registry.ENV, f"toy={toy_module}:ENGINE")
    monkeypatch.setattr(kinds, "_CASE_TYPES", dict(kinds._CASE_TYPES))  # the declaration below undone after
    monkeypatch.setattr(kinds.CaseKind, "_declared", dict(kinds.CaseKind._declared))
    kinds.declare_case_type("toy-case", "toy", frozenset({"n"}), "kvrow_toy_engine:replay")
    found = {"kind": "toy-case", "signature": "write-within-row/dcp>1", "class": "write-within-row"}
    entry = {"target": "toy==1", "status": "counterexample", "seconds": 1, "examples": 3}

    def merged(confirmation: object) -> tuple[int, dict]:
        doc = {"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run"}
        doc["targets"] = [{**entry, "findings": [{**found, "toy": confirmation}]}]
        (tmp_path / "r.json").write_text(json.dumps(doc))
        out = tmp_path / "merged.json"
        code = main(["merge", str(tmp_path / "r.json"), "--json", str(out), "--cases-out", str(tmp_path / "c")])
        return code, json.loads(out.read_text()) if out.exists() else {}

    code, doc = merged("confirmed on the toy's own allocator")
    assert code == 1 and doc["targets"][0]["findings"][0]["toy"] == "confirmed on the toy's own allocator"
    (tmp_path / "merged.json").unlink()
    assert merged(7)[0] == 2  # not text: bad input


def test_pins_are_checked_by_the_engine_of_each_target(toy_module: str, monkeypatch) -> None:
    """``--pin`` names fields of an engine's configuration space: each target's engine checks them."""
    from fuzz.common.errors import BadInput
    from fuzz.common.options import parse_pins

    monkeypatch.setenv(registry.ENV, f"toy={toy_module}:ENGINE")
    toy, sglang = resolve_target("toy==1"), resolve_target("reference")
    assert parse_pins(["rows=2"], [toy]) == {"rows": 2}
    with pytest.raises(BadInput, match="invalid configuration: the toy has no field page_size"):
        parse_pins(["page_size=64"], [toy])
    assert parse_pins(["page_size=64"], [sglang]) == {"page_size": 64}
    with pytest.raises(BadInput, match="invalid configuration"):
        parse_pins(["page_size=64"], [sglang, toy])  # every target's engine: the toy refuses it
    with pytest.raises(BadInput, match="invalid configuration"):
        parse_pins(["page_size=-3"], [sglang])


def test_merge_checks_and_keeps_the_counts_the_targets_engine_declares(
    toy_module: str, monkeypatch, tmp_path: Path
) -> None:
    """SGLang's write-path counts are its engine's report fields: merge checks and carries them for its targets,
    and never for another engine's (whose report declares none)."""
    import json

    from fuzz.cli import main

    monkeypatch.setenv(registry.ENV, f"toy={toy_module}:ENGINE")

    def merged(target: str, count: object) -> tuple[int, dict]:
        entry = {"target": target, "status": "clean", "seconds": 1, "examples": 3, "findings": []}
        doc = {"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run"}
        doc["targets"] = [{**entry, "sglang_scenarios": count}]
        (tmp_path / "r.json").write_text(json.dumps(doc))
        out = tmp_path / "merged.json"
        out.unlink(missing_ok=True)
        code = main(["merge", str(tmp_path / "r.json"), "--json", str(out), "--cases-out", str(tmp_path / "c")])
        return code, json.loads(out.read_text())["targets"][0] if out.exists() else {}

    code, entry = merged("reference", 4)
    assert code == 0 and entry["sglang_scenarios"] == 4
    assert merged("reference", "four")[0] == 2
    code, entry = merged("toy==1", 4)
    assert code == 0 and "sglang_scenarios" not in entry

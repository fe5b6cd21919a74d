"""The sizing surface is one declaration (issue 22): a new entry reaches the model, the real targets' wrapper,
fidelity and the twins test with no other edit; revisions are values a case file rebuilds, so every repro line
fidelity prints replays."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from hermetic import unbroken

from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.revisions import REVISIONS, Revision
from allocator_model.scenario import DecodeScenario
from allocator_model.surface import SURFACE, Entry, EntryKind, Provenance, Result, Shape, declared, entries
from allocator_model.twins import surface_twins
from fuzz.cli import main
from fuzz.engines.sglang.fidelity import differential
from fuzz.engines.sglang.fidelity.cases import FidelityCase
from fuzz.findings.repro import repro_command
from fuzz.targets.base import TargetCallError
from fuzz.targets.resolve import resolve_target

SHAPES = Path(__file__).parent / "sglang_shapes"
DUMMY = Entry(
    "twice_the_page",
    "mem_cache/allocation_sizing.py: get_twice_the_page (a dummy entry of this test)",
    "main",
    EntryKind.SIZING,
    Shape.LAUNCH,
    Result.COUNT,
    lambda m, cfg: 2 * cfg.page_size,
    least=1,
    functions=("get_twice_the_page",),
    twin=lambda g, revision: 2 * g.page_size,
)


def with_function(tmp_path: Path, body: str) -> str:
    """0.5.23's sizing shape plus ``get_twice_the_page`` returning ``body``."""
    text = (SHAPES / "uno.py").read_text() + f"\n\ndef get_twice_the_page() -> int:\n    return {body}\n"
    path = tmp_path / "allocation_sizing.py"
    path.write_text(text)
    return str(path)


def test_every_declared_entry_is_answered_by_the_model_and_named_once():
    model = ModelSizing(REVISIONS["sglang-0.5.23"])
    cfg = ServingConfig.resolve(context_len=100, page_size=16, attn_dcp_size=2, speculative_algorithm="EAGLE")
    for e in entries():
        args = {
            Shape.LAUNCH: (cfg,),
            Shape.RUNTIME: (cfg, cfg.launch_runtime),
            Shape.GUARD: (cfg, 10, 20),
            Shape.LENS: ([(10, 10)], 8, 16),
            Shape.SCENARIO: (DecodeScenario(cfg, 90),),
        }[e.shape]
        assert model.call(e, *args) is not None, e
    assert len({e.name for e in entries()}) == len(SURFACE)


def test_a_dummy_entry_reaches_model_wrapper_fidelity_and_twins(tmp_path, monkeypatch):
    cfg = ServingConfig.resolve(context_len=100, page_size=8)
    with declared(DUMMY):
        assert ModelSizing(REVISIONS["reference"]).call(DUMMY, cfg) == 16  # the model
        good = resolve_target(with_function(tmp_path, "2 * get_schedule().page_size"))
        assert good.sizing.source(DUMMY) is Provenance.READ and good.sizing.call(DUMMY, cfg) == 16  # the wrapper
        assert DUMMY.name in [e.name for e in differential.compared(good.sizing)]  # fidelity compares it
        twins = [t for t in surface_twins() if t.name == f"surface.{DUMMY.name}"]  # the twins test checks it
        assert twins and all(c.want == c.got for c in twins[0].cases())

        off = resolve_target(with_function(tmp_path, "3 * get_schedule().page_size"))
        found = differential.disagreements(off.sizing, ModelSizing(off.revision), FidelityCase(cfg, ((10, 10),)))
        assert [str(v.signature) for v in found] == [f"model-mismatch/{DUMMY.name}"]
        bad = resolve_target(with_function(tmp_path, "'sixteen'"))
        with pytest.raises(TargetCallError, match="returned 'sixteen', not an integer"):
            bad.sizing.call(DUMMY, cfg)
        lacking = resolve_target(str(SHAPES / "uno.py"))  # a file without the function: the model answers
        assert lacking.sizing.source(DUMMY) is Provenance.MODELED and lacking.sizing.call(DUMMY, cfg) == 16
        assert DUMMY.name in lacking.sizing.modeled()
    assert DUMMY.name not in SURFACE and not [t for t in surface_twins() if DUMMY.name in t.name]


def test_the_model_mismatch_groups_are_the_declared_entries():
    from fuzz.findings.kinds import Signature

    assert Signature.parse("model-mismatch/req_to_token_row_width")
    with pytest.raises(ValueError, match="is not a group of model-mismatch"):
        Signature.parse("model-mismatch/no_such_function")


@pytest.mark.parametrize("revision", list(REVISIONS.values()), ids=list(REVISIONS))
def test_a_revision_is_rebuilt_exactly_from_its_data(revision):
    assert Revision.from_dict(json.loads(json.dumps(revision.to_dict()))) == revision


@pytest.mark.parametrize(
    "change",
    [{"pools": ["nowhere"]}, {"dcp": "yes"}, {"headroom": "sometimes"}, {"extra": 1}, {"name": 5}],
    ids=["pool", "bool", "enum", "unknown-field", "name"],
)
def test_a_revision_that_is_not_one_is_refused_in_one_line(change):
    data = {**REVISIONS["sglang-0.5.23"].to_dict(), **change}
    with pytest.raises(ValueError) as e:
        Revision.from_dict(data)
    assert "\n" not in str(e.value)


def test_every_repro_line_fidelity_prints_replays(tmp_path, capsys, monkeypatch):
    """Issue 22's first defect: a revision fitted to the file (``sglang-0.5.23-no-uno``) is stored whole, so the
    pasted repro line replays (exit 1 on the mismatch it names) instead of 'unknown model revision'."""
    monkeypatch.chdir(tmp_path)
    target = str(SHAPES / "accessors.py")
    code = main(["fidelity", "--target", target, "--configs", "200", "--cases", "cases", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1, out
    repros = [line.split("repro: ", 1)[1] for line in unbroken(out).splitlines() if line.startswith("repro: ")]
    assert repros
    for line in repros:
        argv = shlex.split(line.removeprefix(repro_command()))  # "PROGRAM repro CASE --target T"
        argv.insert(0, "repro")
        assert main(argv) == 1, line
        replayed = capsys.readouterr().out
        assert "FAILS model-mismatch/" in replayed
    docs = [json.loads((tmp_path / "cases" / f).read_text()) for f in os.listdir(tmp_path / "cases")]
    assert all(d["revision"]["name"].endswith("-no-uno") for d in docs)


def _lens_variant(tmp_path: Path, name: str, committed: str, allocated: str) -> str:
    text = (SHAPES / "uno.py").read_text()
    text = text.replace("r.kv.kv_allocated_len", allocated).replace("r.kv.kv_committed_len", committed)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("version", [None, "0.5.15", "0.5.18"])
def test_a_file_reading_the_lengths_on_req_gets_the_verdict_of_one_reading_req_kv_or_exit_2(
    tmp_path, capsys, monkeypatch, version
):
    """Issue 22: the request handed to a real ``page_aligned_decode_alloc_lens`` is the release's own ``Req``
    (``runtime.request``): both shapes of SGLang's history work where that release has them, and a field its
    ``Req`` lacks is one line and exit 2 naming it; never a false ``sizing-raised``."""
    monkeypatch.chdir(tmp_path)
    on_kv = _lens_variant(tmp_path, "on_kv.py", "r.kv.kv_committed_len", "r.kv.kv_allocated_len")
    on_req = _lens_variant(tmp_path, "on_req.py", "r.kv_committed_len", "r.kv_allocated_len")
    verdicts = []
    for path in (on_kv, on_req):
        spec = path if version is None else f"{path}@{version}"
        argv = ["run", "--target", spec, "--profile", "ci", "--max-examples", "30", "--quiet", "--cases", "c"]
        code = main([*argv, "--json", str(tmp_path / "r.json")])
        out, err = capsys.readouterr()
        assert "sizing-raised" not in out
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and "has no attribute 'kv" in err, err
            verdicts.append(None)
        else:
            (entry,) = json.loads((tmp_path / "r.json").read_text())["targets"]
            verdicts.append((code, sorted(f["signature"] for f in entry["findings"])))
    assert any(v is not None for v in verdicts) or version == "0.5.18"  # 0.5.18 splits them: neither shape
    known = [v for v in verdicts if v is not None]
    assert all(v == known[0] for v in known), verdicts

"""The release records (``fuzz.engines.sglang.records``) are what their wheels give, and say so when not.

Byte for byte on each wheel: ``tests/test_sglang_runtime.py::test_request_layouts_match_every_wheel`` (the pinned
wheels here, every release in the network tier).  Here: a perturbed wheel fails the check, bad input is one line
and exit 2, and every committed record is well formed.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from hermetic import missing_wheel, pinned_wheel

from fuzz.engines.sglang.real.runtime.request import _LENS, LAYOUTS
from fuzz.engines.sglang.records import (
    KV_PROPERTIES,
    RECORDS_DIR,
    REQ_ATTRIBUTES,
    SCHEMA,
    SCHEMA_VERSION,
    record,
    releases,
)
from fuzz.engines.sglang.records.generate import SCHEDULE_BATCH, main


def rewrapped(src: Path, dest_dir: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """A copy of wheel ``src`` (same name) whose schedule_batch.py is ``edit(text)``."""
    dest = dest_dir / src.name
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == SCHEDULE_BATCH:
                text = data.decode()
                assert edit(text) != text, "the edit no longer applies to this wheel"
                data = edit(text).encode()
            zout.writestr(item, data)
    return dest


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def wheel_0_5_23() -> Path:
    found = pinned_wheel("0.5.23")
    if found is None:
        pytest.skip(missing_wheel("0.5.23"))
    return found


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("\nclass ReqKvInfo", "\n# a line more\nclass ReqKvInfo", 1),  # moved
        lambda text: text.replace("kv_committed_len: int = 0", "kv_committed_len: int = 1", 1),  # a constant
    ],
    ids=["a-class-moved", "a-constant-changed"],
)
def test_a_perturbed_wheel_fails_the_check(wheel_0_5_23, tmp_path, capsys, edit) -> None:
    assert main(["--check", str(wheel_0_5_23)]) == 0
    assert "same: 0.5.23.json" in capsys.readouterr().out
    perturbed = rewrapped(wheel_0_5_23, tmp_path, edit)
    assert main(["--check", str(perturbed)]) == 1
    assert "DIFFERS: 0.5.23.json is not what" in capsys.readouterr().out


def test_writing_then_checking_agrees(wheel_0_5_23, tmp_path, capsys) -> None:
    assert main(["--records", str(tmp_path), str(wheel_0_5_23)]) == 0
    assert (tmp_path / "0.5.23.json").read_text() == (RECORDS_DIR / "0.5.23.json").read_text()
    assert main(["--records", str(tmp_path), "--check", str(wheel_0_5_23)]) == 0


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    not_a_wheel = tmp_path / "sglang.zip"
    not_a_wheel.write_bytes(b"")
    assert main(["--records", str(tmp_path), str(not_a_wheel)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    empty = tmp_path / "sglang-0.5.23-py3-none-any.whl"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("sglang/__init__.py", "")
    assert main(["--records", str(tmp_path), "--check", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no {SCHEDULE_BATCH} in the wheel" in err
    broken = tmp_path / "sglang-0.5.22-py3-none-any.whl"
    with zipfile.ZipFile(broken, "w") as z:
        z.writestr(SCHEDULE_BATCH, "class Req(:\n")
    assert main(["--records", str(tmp_path), str(broken)]) == 2 and "does not parse" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))


def test_every_committed_record_is_well_formed_and_the_layouts_are_its() -> None:
    assert releases() == tuple(f"0.5.{n}" for n in range(13, 24))
    for release in releases():
        data = json.loads((RECORDS_DIR / f"{release}.json").read_text())
        assert (data["schema"], data["schema_version"], data["release"]) == (SCHEMA, SCHEMA_VERSION, release)
        assert record(release) == data and set(LAYOUTS) == set(releases())
        req = data["req"]
        assert set(req["on_req"]) | set(req["on_kv"]) <= REQ_ATTRIBUTES and set(req["kv_properties"]) <= KV_PROPERTIES
        assert list(req["on_req"].values()) == sorted(req["on_req"].values())  # in line order
    assert set(_LENS) <= REQ_ATTRIBUTES  # make_request only sets names a record locates
    sections = {"schema", "schema_version", "release", "sources", "req", "where", "after_decode", "pool_allocators"}
    facts = {"eagle_preclaims_bonus", "attention_modules", "no_draft_extend"}
    assert all(set(record(r)) == {*sections, *facts} for r in releases())
    # The version branch it replaces: 0.5.13-0.5.14's EAGLE mixin takes the bonus slot in prepare.
    assert [r for r in releases() if record(r)["eagle_preclaims_bonus"]] == ["0.5.13", "0.5.14"]
    # The hand tables they replace, read from the wheels instead: what prepare_for_decode adds after the decode
    # allocation (from 0.5.16 alloc_for_decode grows kv_allocated_len itself, from 0.5.19 kv_committed_len too)...
    n = {r: int(r.split(".")[2]) for r in releases()}  # 0.5.n
    after = {r: tuple(record(r)["after_decode"]) for r in releases()}
    both = ("decode_batch_idx", "kv_committed_len", "kv_allocated_len")
    assert after == {r: both[: 3 if n[r] <= 15 else 2 if n[r] <= 18 else 1] for r in releases()}
    # ... and the kinds of pool with an allocator class of their own: SWA, HiSparse from 0.5.14, unified from 0.5.20.
    kinds = {r: list(record(r)["pool_allocators"]) for r in releases()}
    unified = ["unified-mamba", "unified-swa", "unified-mamba-swa"]
    assert kinds == {r: ["swa"] + ["hisparse"] * (n[r] >= 14) + unified * (n[r] >= 20) for r in releases()}
    # ... and the modules each checked backend's builders run from, release by release (the version branches they
    # replace): the builders' package (layers/attention/triton_ops to 0.5.15, kernels/ops/kvcache to 0.5.22,
    # kernels/ops/attention after; FA3's metadata and the utils in kernels/ops/attention from 0.5.16), FA3's
    # page-table builder from 0.5.15, trtllm_mha's from 0.5.14 and its fused graph metadata from 0.5.15, the pool's
    # hooks (0.5.17-0.5.18, 0.5.21+ where the backend imports them), the runner's translator (0.5.19+) and what it
    # imports (0.5.22+).
    attn, mem, kops = "sglang.srt.layers.attention.", "sglang.srt.mem_cache.", "sglang.kernels.ops."
    for r in releases():
        ops = attn + "triton_ops." if n[r] <= 15 else kops + ("attention." if n[r] >= 23 else "kvcache.")
        own = attn + "triton_ops." if n[r] <= 15 else kops + "attention."  # FA3's metadata
        utils = attn + "utils" if n[r] <= 15 else kops + "attention.utils"
        runner = [mem + "kv_index_translator"] * (n[r] >= 19)
        runner += [mem + "unified_draft_pool", mem + "kv_loc_plan"] * (n[r] >= 22)
        hooks = [attn + "unified_mem_hooks"] * (17 <= n[r] <= 18) + [attn + "kv_shard_hooks"] * (n[r] >= 21)
        page_table = [ops + "trtllm_mha_page_table"]
        base = [attn + "base_attn_backend"]
        mods = record(r)["attention_modules"]
        fa3 = [attn + "flashattention_backend", *base, own + "metadata", utils, *page_table * (n[r] >= 15)]
        assert mods["fa3"] == [*fa3, *hooks, *runner], r
        trtllm_mha = [attn + "trtllm_mha_backend", attn + "flashinfer_backend", *base, utils]
        trtllm_mha += [*page_table * (n[r] >= 14), *[ops + "trtllm_mha_graph_metadata"] * (n[r] >= 15)]
        ragged = ["sglang.srt.layers.quantization.fp4_kv_cache_quant_method", "sglang.srt.speculative.ragged_verify"]
        assert mods["trtllm_mha"] == [*trtllm_mha, *ragged * (n[r] >= 16), *runner], r
        mla = [attn + "flashinfer_mla_backend", *base, utils, ops + "kv_indices"]
        assert mods["flashmla"] == [attn + "flashmla_backend", *mla, *hooks[: 17 <= n[r] <= 18], *runner], r
        assert mods["trtllm_mla"] == [attn + "trtllm_mla_backend", *mla, *hooks, *runner], r
    # ... and FlashMLA's draft extend, FlashInfer's MLA backend's before 0.5.16: its factory returned none.
    assert {r: record(r)["no_draft_extend"] for r in releases()} == {r: ["flashmla"] * (n[r] <= 15) for r in n}


def test_a_release_without_a_record_is_named() -> None:
    with pytest.raises(KeyError, match="no release record for sglang 0.5.99"):
        record("0.5.99")


def test_an_import_chain_follows_re_exports_to_the_definition_and_refuses_a_broken_one() -> None:
    """``attention_modules``' rule: the modules along an import to the module defining the name; a chain through a
    module the wheel lacks, or one that ends where nothing defines the name, is an error, never a shorter list."""
    import ast

    from fuzz.engines.sglang.records.attention import import_chain
    from fuzz.engines.sglang.records.errors import RecordError

    sources = {
        "sglang.a": "from sglang.b import f\n",
        "sglang.b": "def g():\n    from sglang.c import f as f\n",  # a function's own import counts
        "sglang.c": "def f():\n    pass\n",
        "sglang.d": "from sglang.gone import g\n",
        "sglang.e": "from sglang.e2 import h\n",
        "sglang.e2": "x = 1\n",
    }

    def parse(module: str) -> ast.Module | None:
        return ast.parse(sources[module]) if module in sources else None

    assert import_chain(parse, "sglang.a", "f") == ["sglang.b", "sglang.c"]
    assert import_chain(parse, "sglang.c", "f") == [] and import_chain(parse, "sglang.missing", "f") == []
    with pytest.raises(RecordError, match="not in the wheel"):
        import_chain(parse, "sglang.d", "g")
    with pytest.raises(RecordError, match="neither defines nor imports h"):
        import_chain(parse, "sglang.e", "h")

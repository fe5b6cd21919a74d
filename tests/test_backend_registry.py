"""Every attention backend each release registers is checked or listed with its reason (``sglang.backends``).

The names are read from each release's own ``attention_registry.py`` (``@register_attention_backend("name")``): a
backend a release adds that neither a checked table nor the list names fails here.  Releases outside the pinned set
need their wheel (network-marked, as the other per-release tests).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hermetic import PINNED_RELEASES, require_wheel

from fuzz.engines.sglang import backends

RELEASES = tuple(f"0.5.{n}" for n in range(13, 24))
EVERY_RELEASE = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]
DOC = Path(__file__).parent.parent / "docs" / "ci.md"


def registry(release: str) -> list[str]:
    with zipfile.ZipFile(require_wheel(release)) as whl:
        return backends.registered(whl.read(backends.REGISTRY).decode())


@pytest.mark.parametrize("release", EVERY_RELEASE)
def test_every_registered_backend_is_checked_or_listed_with_its_reason(release: str) -> None:
    names = registry(release)
    assert {"fa3", "trtllm_mha", "flashinfer", "triton"} <= set(names)  # the reader found the registry's names
    assert backends.unaccounted(names) == []


def test_the_list_names_only_backends_a_release_registers() -> None:
    """No stale entry: each listed name is registered by a pinned release (the pinned set spans every name the list
    holds: 0.5.13's tokenspeed_mla, cutlass_mla and dual_chunk_flash_attn, 0.5.23's qsa and llada2_cfg_flashinfer)."""
    seen = {name for release in PINNED_RELEASES for name in registry(release)}
    assert set(backends.UNCHECKED) <= seen
    assert set(backends.checked()) <= seen and not set(backends.checked()) & set(backends.UNCHECKED)


def test_a_new_backend_is_unaccounted() -> None:
    """The check can fail: a registry with one name more than the list knows reports that name."""
    source = (
        '@register_attention_backend("fa3")\ndef a(r): ...\n@register_attention_backend("new_one")\ndef b(r): ...\n'
    )
    assert backends.registered(source) == ["fa3", "new_one"]
    assert backends.unaccounted(backends.registered(source)) == ["new_one"]


def test_the_docs_list_every_backend_as_the_code_does() -> None:
    assert backends.table_text() in DOC.read_text()


# trtllm_mla's CUDA-graph builders: a subclass that overrides none of them fills its tables with trtllm_mla's.
TRTLLM_MLA_GRAPH_METHODS = frozenset(
    {"init_cuda_graph_state", "_init_cuda_graph_metadata", "_apply_cuda_graph_metadata", "_calc_padded_blocks"}
)
OVERRIDING = frozenset(
    {"0.5.17", "0.5.18"}
)  # backends/registry.py: "its builders but in 0.5.17-0.5.18, which override them"


@pytest.mark.parametrize("release", EVERY_RELEASE)
def test_trtllm_mlas_subclasses_override_its_graph_builders_only_where_the_list_says(release: str) -> None:
    """``cutedsl_mla`` and ``tokenspeed_mla`` are listed as trtllm_mla's subclasses on its builders but in
    0.5.17-0.5.18: read from each release's files (their classes over ``TRTLLMMLABackend``, the methods they
    define)."""
    import ast

    found = {}
    with zipfile.ZipFile(require_wheel(release)) as whl:
        for name in ("cutedsl_mla", "tokenspeed_mla"):
            member = f"sglang/srt/layers/attention/{name}_backend.py"
            if member not in whl.namelist():
                continue
            tree = ast.parse(whl.read(member).decode())
            for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
                if any(ast.unparse(b) == "TRTLLMMLABackend" for b in cls.bases):
                    defined = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
                    found[(name, cls.name)] = defined & TRTLLM_MLA_GRAPH_METHODS
    assert found, f"{release}: no subclass of TRTLLMMLABackend read"  # the reader found the classes
    assert {bool(methods) for methods in found.values()} == {release in OVERRIDING}, found

"""What the builder tests of every backend share: a launch's configuration, the model's twin of its builds, and the
checks that SGLang's builds run interpreted and repeat."""

from __future__ import annotations

from typing import Any

from allocator_model import page_tables as pt
from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.revisions import RELEASE_REVISIONS, get_revision


def spec_config(
    context_len: int, page: int, algorithm: str | None, draft_tokens: int = 4
) -> tuple[ServingConfig, SpecRuntime | None]:
    """No speculation, EAGLE (S,K,D) = (D-1,1,D), or another algorithm (DFLASH) with D draft tokens."""
    if algorithm is None:
        return ServingConfig.resolve(context_len=context_len, page_size=page), None
    extra = {"speculative_num_steps": draft_tokens - 1, "speculative_eagle_topk": 1} if algorithm == "EAGLE" else {}
    cfg = ServingConfig.resolve(
        context_len=context_len,
        page_size=page,
        speculative_algorithm=algorithm,
        speculative_num_draft_tokens=draft_tokens,
        **extra,
    )
    return cfg, cfg.launch_runtime


def twin(
    backend: pt.AttentionBackend, version: str, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row_width: int
) -> list[pt.Build]:
    """The model's twin of ``backend``'s builds under ``version``'s revision."""
    sizing = get_revision(RELEASE_REVISIONS[version]).graph_sizing(backend)
    return pt.graph_builds(cfg, rt, seq, sizing, row_width)


def kv_indices_builds_run_interpreted(
    r: Any, backend: pt.AttentionBackend, version: str, context_len: int, seq: int, row_width: int
) -> Any:
    """SGLang's builds of ``backend`` (FlashMLA's kv-indices kernel, trtllm_mla's too) at page 64: a build repeated
    after another is the same (a call's buffers are refilled), a short one is the twin's, the kernel is interpreted
    (nothing compiled), outside SGLang's calls this machine's torch has no CUDA device, and a topk > 1 launch builds
    nothing of this table.  Its ``GraphBuilders``, for what a backend checks besides."""
    import pytest
    import torch
    from triton.runtime.interpreter import InterpretedFunction

    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    cfg, rt = spec_config(context_len, 64, "EAGLE")
    first = graph_builds(r, backend, cfg, rt, seq, row_width)
    assert graph_builds(r, backend, cfg, rt, 10, row_width) == twin(backend, version, cfg, rt, 10, row_width)
    assert graph_builds(r, backend, cfg, rt, seq, row_width) == first
    builders = r.attention[backend]
    assert builders.loader.compiled_kernels() == []
    (module,) = [
        m for d, m in builders.loader.modules.items() if d.endswith("kv_indices") and d in builders.loader.executed
    ]
    assert isinstance(module.create_flashmla_kv_indices_triton, InterpretedFunction)
    with pytest.raises((RuntimeError, AssertionError)):  # outside SGLang's calls: this machine's torch, no CUDA
        torch.zeros(1, device="cuda")
    tree = ServingConfig.resolve(
        context_len=context_len,
        page_size=64,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=2,
        speculative_num_draft_tokens=4,
    )
    assert graph_builds(r, backend, tree, tree.launch_runtime, seq, row_width) == []
    return builders


def reduced(cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row: int, sizing: pt.GraphSizing) -> tuple[int, ...]:
    """``reach_grid`` (what prove sweeps) of one launch: (width, furthest write end, furthest read end)."""
    import torch

    from allocator_model.page_table_grid import reach_grid

    t = torch.tensor
    w, write, read = reach_grid(
        cfg.speculative_algorithm,
        t(cfg.page_size),
        t([cfg.topk]),
        t([rt.num_draft_tokens if rt else 0]),
        t([cfg.context_len]),
        t([row]),
        t([seq]),
        sizing,
        t([rt.num_steps if rt else 0]),
    )
    return int(w[0]), int(write[0]), int(read[0])

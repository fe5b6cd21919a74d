"""What the builder tests of every backend share: a launch's configuration and the model's twin of its builds."""

from __future__ import annotations

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

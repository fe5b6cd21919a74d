"""The stand-ins the decode entry points are handed: ``ScheduleBatch``, the tree cache, ``ReqToTokenPool``.

Each carries exactly what the entries read (0.5.13-0.5.23) and is strict:
an attribute it lacks raises ``StandInMissing`` naming it, and the names
the real object is known NOT to have (``ABSENT``) raise ``AttributeError``
as the real one would, so ``hasattr``/``getattr(x, n, default)`` in
SGLang stay truthful.  Setting attributes is allowed (the real objects are
plain classes; the entries store ``seq_lens_cpu``, ``max_seq_len_host``...).

What they stand for:

* the tree cache: a cache with no prefix sharing (``--disable-radix-cache``):
  ``is_chunk_cache()`` True (0.5.13-0.5.22 ``evict_from_tree_cache``
  returns at once [cite: evict-returns-for-chunk-cache]),
  ``supports_prefix_sharing()`` False (0.5.23 [cite: evict-asks-prefix-sharing]), no SWA, no
  Mamba, no sessions; its page is the scheduled ``page_size`` (the
  allocator's is page_size * attn_dcp_size under DCP [cite: alloc-page-size-dcp]);
* ``ReqToTokenPool``: the caller's ``req_to_token`` view (row 0 is SGLang's
  padding row [cite: req-to-token-padding-row] [cite: req-to-token-free-slots]), with the
  release's own ``write`` and ``alloc_aux_to_lengths`` methods sliced from
  its memory_pool.py and bound to it;
* ``ScheduleBatch``: the decode batch; ``maybe_evict_swa()`` does nothing
  because the tree cache does not support SWA (the method's first test
  [cite: maybe-evict-swa]), ``batch_size()`` is
  ``len(reqs)`` (0.5.23 schedule_batch.py, every release), the penalizer
  is not required (no penalties are modeled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..stubs import StandInMissing
from .inert import STANDS_FOR


class Strict:
    """Attributes given at construction; a missing one is ``StandInMissing`` (or AttributeError if ``ABSENT``)."""

    ABSENT: frozenset[str] = frozenset()

    def __init__(self, name: str, **values: Any) -> None:
        self.__dict__["_name"] = name
        self.__dict__.update(values)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in self.ABSENT:
            raise AttributeError(f"{self._name} has no {attr} (as SGLang's own has none)")
        raise StandInMissing(
            f"the write path reads {self._name}.{attr}, which kvrow-fuzz's stand-in does not carry "
            f"(it carries {', '.join(sorted(k for k in self.__dict__ if not k.startswith('_')))})"
        )

    def __repr__(self) -> str:
        return f"<kvrow-fuzz stand-in {self._name}>"


def _constant(value: Any) -> Callable[..., Any]:
    def answer(*args: Any, **kwargs: Any) -> Any:
        return value

    return answer


class TreeCache(Strict):
    """The tree cache of a deployment without prefix sharing (see the module docstring)."""

    # Names SGLang probes with hasattr/getattr(default) that such a cache does not have:
    # getattr(tree_cache, "slots", None) (streaming sessions) [cite: checker-probes-slots];
    # hasattr(tree_cache, "release_swa_prefix_lock") [cite: maybe-evict-swa-probes-release-lock].
    ABSENT = frozenset({"slots", "dec_swa_lock_only", "release_swa_prefix_lock"})
    __sglang_stands_for__ = frozenset({"ChunkCache", "BasePrefixCache", "ABC", "object"})

    def __init__(self, allocator: Any, req_to_token_pool: Any, page_size: int, free_kv_row: Callable[..., None]):
        super().__init__(
            "tree_cache",
            token_to_kv_pool_allocator=allocator,
            req_to_token_pool=req_to_token_pool,
            page_size=page_size,
            is_chunk_cache=_constant(True),
            supports_prefix_sharing=_constant(False),
            supports_swa=_constant(False),
            supports_mamba=_constant(False),
            supports_auxiliary_swa=_constant(False),
            session_records=_constant({}),
            pretty_print=_constant(None),
            free_kv_row=free_kv_row,
        )

    def available_and_evictable_str(self) -> str:
        """What the OOM messages print (they ask the tree cache for it [cite: available-and-evictable-str])."""
        return f"Available tokens: {self.token_to_kv_pool_allocator.available_size()}, evictable: 0 (no tree cache)"


class ReqToTokenPool(Strict):
    """SGLang's ``ReqToTokenPool`` around the caller's tensor; ``methods``: the release's own, bound here."""

    __sglang_stands_for__ = frozenset({"ReqToTokenPool", "object"})  # no base [cite: req-to-token-pool-class]

    def __init__(self, req_to_token: Any, methods: dict[str, Callable[..., Any]]) -> None:
        super().__init__(
            "req_to_token_pool",
            req_to_token=req_to_token,
            device="cpu",
            size=req_to_token.shape[0] - 1,
            max_context_len=req_to_token.shape[1],
            _aux_cache=None,  # no auxiliary cache on a plain pool [cite: req-to-token-aux-cache]
        )
        for name, fn in methods.items():
            self.__dict__[name] = fn.__get__(self)


class ScheduleBatch(Strict):
    """The decode batch handed to an entry point (see the module docstring)."""

    # ScheduleBatch(ScheduleBatchDisaggregationDecodeMixin), a dataclass [cite: schedule-batch-class].
    __sglang_stands_for__ = frozenset({"ScheduleBatch", "ScheduleBatchDisaggregationDecodeMixin", "object"})
    ABSENT = frozenset({"attn_cp_metadata"})

    def maybe_evict_swa(self) -> None:
        if self.tree_cache.supports_swa():
            raise StandInMissing("ScheduleBatch.maybe_evict_swa with an SWA tree cache is not modeled")

    def batch_size(self) -> int:
        return len(self.reqs)

    def cumulate_penalty_output_tokens(self) -> None:
        raise StandInMissing("ScheduleBatch.cumulate_penalty_output_tokens: penalties are not modeled")


def sampling_info() -> Strict:
    """``batch.sampling_info``: no penalizer is required (so the entries skip penalty accumulation)."""
    return Strict("sampling_info", penalizer_orchestrator=Strict("penalizer_orchestrator", is_required=False))


def model_config() -> Strict:
    """``batch.model_config``: a decoder-only model (as alloc_for_decode_default asks it).

    [cite: decode-default-reads-encoder-decoder]
    """
    return Strict("model_config", is_encoder_decoder=False)


__all__ = ["STANDS_FOR", "ReqToTokenPool", "ScheduleBatch", "Strict", "TreeCache", "model_config", "sampling_info"]

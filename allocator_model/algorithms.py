"""Speculative algorithms, as SGLang's ``SpeculativeAlgorithm`` classifies them.

Only the facts that decide KV sizing are kept: which write path an algorithm
takes at decode time and whether its draft phase writes KV of its own.
"""

from __future__ import annotations

EAGLE = "EAGLE"
EAGLE3 = "EAGLE3"
STANDALONE = "STANDALONE"
FROZEN_KV_MTP = "FROZEN_KV_MTP"
NGRAM = "NGRAM"
DFLASH = "DFLASH"
DSPARK = "DSPARK"
UNO = "UNO"

ALL = (EAGLE, EAGLE3, STANDALONE, FROZEN_KV_MTP, NGRAM, DFLASH, DSPARK, UNO)

# topk == 1 forces num_draft_tokens = num_steps + 1 for these (server_args).
EAGLE_FAMILY = frozenset({EAGLE, EAGLE3, STANDALONE, FROZEN_KV_MTP})
# Adaptive speculative decoding moves num_steps per batch; EAGLE/EAGLE3 only.
ADAPTIVE = frozenset({EAGLE, EAGLE3})
# Reserve 2 * current D, own code path (not the sizing module's reserve).
DFLASH_FAMILY = frozenset({DFLASH, DSPARK})


def normalize(name: str | None) -> str | None:
    """Upper-case an algorithm name; None and "none" mean speculative decoding is off."""
    if name is None:
        return None
    upper = str(name).strip().upper()
    if upper in ("", "NONE"):
        return None
    return upper


def has_draft_kv(algorithm: str) -> bool:
    """Whether the draft phase writes KV chains (NGRAM's tree lives only in the verify mask)."""
    return algorithm != NGRAM


def is_uno(algorithm: str | None) -> bool:
    return algorithm == UNO

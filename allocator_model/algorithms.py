"""Speculative algorithms, as SGLang's ``SpeculativeAlgorithm`` classifies them.

Only the facts that decide KV sizing are kept: which write path an algorithm
takes at decode time and whether its draft phase writes KV of its own.

``Algorithm`` is a ``str`` enum: a member equals, hashes and prints as its
SGLang name ("EAGLE"), so case files (JSON), ``--pin`` values and any code
that compares with plain names keep working.
"""

from __future__ import annotations

from fuzz.common.compat import StrEnum


class Algorithm(StrEnum):
    """SGLang's ``--speculative-algorithm`` names (upper case, as server_args normalizes them)."""

    EAGLE = "EAGLE"
    EAGLE3 = "EAGLE3"
    STANDALONE = "STANDALONE"
    FROZEN_KV_MTP = "FROZEN_KV_MTP"
    NGRAM = "NGRAM"
    DFLASH = "DFLASH"
    DSPARK = "DSPARK"
    UNO = "UNO"


EAGLE = Algorithm.EAGLE
EAGLE3 = Algorithm.EAGLE3
STANDALONE = Algorithm.STANDALONE
FROZEN_KV_MTP = Algorithm.FROZEN_KV_MTP
NGRAM = Algorithm.NGRAM
DFLASH = Algorithm.DFLASH
DSPARK = Algorithm.DSPARK
UNO = Algorithm.UNO

ALL: tuple[Algorithm, ...] = tuple(Algorithm)

# topk == 1 forces num_draft_tokens = num_steps + 1 for these (server_args).
EAGLE_FAMILY: frozenset[Algorithm] = frozenset({EAGLE, EAGLE3, STANDALONE, FROZEN_KV_MTP})
# Adaptive speculative decoding moves num_steps per batch; EAGLE/EAGLE3 only.
ADAPTIVE: frozenset[Algorithm] = frozenset({EAGLE, EAGLE3})
# A draft that must fuse into a mamba-hybrid host's pages under unified memory: ``is_eagle()`` (EAGLE, EAGLE3,
# FROZEN_KV_MTP [cite: spec-is-eagle]) or ``is_dflash()`` [cite: unified-mamba-draft-must-fuse].
FUSED_DRAFT: frozenset[Algorithm] = frozenset({EAGLE, EAGLE3, FROZEN_KV_MTP, DFLASH})
# Reserve 2 * current D, own code path (not the sizing module's reserve).
DFLASH_FAMILY: frozenset[Algorithm] = frozenset({DFLASH, DSPARK})


def normalize(name: object) -> str | None:
    """Upper-case an algorithm name; None and "none" mean speculative decoding is off.

    A known name comes back as its ``Algorithm`` member; an unknown one as
    the upper-cased string, for config validation to reject with its name.
    """
    if name is None:
        return None
    upper = str(name).strip().upper()
    if upper in ("", "NONE"):
        return None
    try:
        return Algorithm(upper)
    except ValueError:
        return upper


def has_draft_kv(algorithm: str) -> bool:
    """Whether the draft phase writes KV chains (NGRAM's tree lives only in the verify mask)."""
    return algorithm != NGRAM


def is_uno(algorithm: str | None) -> bool:
    """UNO: Q draft slots plus one clean-root position, its own L and its own guard (0.5.20+)."""
    return algorithm == UNO


def drafts_tree(algorithm: str | None) -> bool:
    """Whether the spec v2 tree layout (page > 1, topk > 1) can apply: draft KV chains, not UNO.

    The tree gives each of the K branches its own pages; UNO keeps its own
    layout (Q + 1 slots) and NGRAM writes no draft KV at all.
    """
    return algorithm is not None and not is_uno(algorithm) and has_draft_kv(algorithm)

"""The cyclic garbage collector of this tool's own process: collected less often than Python's default."""

from __future__ import annotations

import gc

# Python's default is 700: allocations of container objects, less deallocations, between two young collections.
YOUNG_THRESHOLD = 20_000


def collect_less_often() -> None:
    """Raise the youngest generation's threshold to ``YOUNG_THRESHOLD`` (never lower one already higher).

    A campaign makes about a million short-lived objects (requests, configurations, traced values) over a
    heap of about a million long-lived ones (torch, triton, the target's modules).  At the default, a full
    collection runs about once a second of a campaign and scans that whole heap (a tenth of a second each);
    here about once a campaign.  Nothing else changes: reference counting still frees every object that is
    not in a cycle at once, and a cycle is freed by a later collection instead of an earlier one.
    """
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)

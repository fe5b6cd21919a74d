"""One request stand-in per release, shaped as that release's ``Req`` (``managers/schedule_batch.py``).

Where a request keeps its KV bookkeeping moved twice (``LAYOUTS``, each release's
record's ``req`` section, generated from its wheel):

    0.5.13-0.5.15  on the Req itself: kv_committed_len, kv_allocated_len, req_pool_idx (no ``req.kv``)
    0.5.16-0.5.18  kv_committed_len and req_pool_idx on the Req; ``req.kv`` is a ``ReqKvInfo`` holding
                   kv_allocated_len and swa_evicted_seqlen (both required, slots): 0.5.18's eagle_utils.py
                   reads ``r.kv.kv_allocated_len`` and ``r.kv_committed_len`` [cite: eagle-reads-req-lengths]
    0.5.19-0.5.23  everything on ``req.kv`` (``ReqKvInfo``: req_pool_idx, cache_protected_len,
                   kv_committed_len, kv_allocated_len, ..., ``holds_kv`` property); no Req property proxies them

So ``r.kv.kv_allocated_len`` and ``r.kv_committed_len`` each work exactly
where that release's ``Req`` supports them.  Reading a modeled name the
release does not have (``r.kv_committed_len`` on 0.5.23, ``r.kv`` on
0.5.13) raises ``ReqAttributeMissing``, an ``AttributeError`` naming the
attribute and the release (as the real ``Req`` raises AttributeError:
``hasattr`` stays truthful); a name the release has but this stand-in does
not model raises ``StandInMissing`` (never a silent default).

Besides the lengths the write path reads ``decode_batch_idx`` (every
entry increments it) and, on DFLASH/DSPARK and UNO, ``sampling_params.top_k``
([cite: dflash-reads-top-k], [cite: uno-reads-top-k]).

Light on purpose (no torch, no triton): the lead also hands these to a
sizing file's ``page_aligned_decode_alloc_lens(reqs, reserve=, page_size=)``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, overload

from fuzz.engines.sglang.records import LENS as _LENS
from fuzz.engines.sglang.records import record, releases

from ..stubs import StandInMissing

SCHEDULE_BATCH = "managers/schedule_batch.py"


@dataclass(frozen=True)
class Layout:
    """Where one release's ``Req`` keeps what the write path reads (line numbers in its schedule_batch.py)."""

    req_class: int  # ``class Req``
    req_init: int  # ``Req.__init__``
    kv_class: int | None  # ``class ReqKvInfo`` (None: no such class)
    on_req: dict[str, int]  # attribute set in Req.__init__ -> its line
    on_kv: dict[str, int]  # ReqKvInfo field -> its line
    kv_properties: dict[str, int]  # ReqKvInfo property -> its line
    kv_fields: tuple[str, ...]  # every ReqKvInfo field, in order (slots: nothing else can be set)


def _layout(release: str) -> Layout:
    req = record(release)["req"]
    return Layout(
        req["req_class"],
        req["req_init"],
        req["kv_class"],
        req["on_req"],
        req["on_kv"],
        req["kv_properties"],
        tuple(req["kv_fields"]),
    )


# Each release's layout, from its record (``fuzz.engines.sglang.records``: generated from its wheel's
# schedule_batch.py by an AST scan, checked against the wheel by the suite).
LAYOUTS: dict[str, Layout] = {release: _layout(release) for release in releases()}
# Every name some release's Req or ReqKvInfo models here: one a release lacks is known to be absent there.
_MODELED = frozenset(n for lay in LAYOUTS.values() for n in (*lay.on_req, *lay.on_kv, *lay.kv_properties))


class ReqAttributeMissing(AttributeError):
    """The release's ``Req`` (or ``ReqKvInfo``) has no such attribute: the real object raises AttributeError too."""


def release_of(version: str) -> str:
    """The release whose layout a version uses: an exact release, or the newest one not after it."""
    if version in LAYOUTS:
        return version
    try:
        wanted = tuple(int(p) for p in version.split(".")[:3])
    except ValueError:
        raise StandInMissing(f"no Req layout for sglang {version!r} (known: {', '.join(LAYOUTS)})") from None
    older = [r for r in LAYOUTS if tuple(map(int, r.split("."))) <= wanted]
    if not older:
        raise StandInMissing(f"no Req layout for sglang {version} (the oldest known is {next(iter(LAYOUTS))})")
    return older[-1]


class SamplingParams:
    """``req.sampling_params``: only ``top_k`` [cite: sampling-params-top-k]; anything else stops."""

    def __init__(self, top_k: int) -> None:
        self.top_k = top_k

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise StandInMissing(f"the write path reads req.sampling_params.{name}, which kvrow-fuzz does not model")

    def __repr__(self) -> str:
        return f"SamplingParams(top_k={self.top_k})"


@dataclass(frozen=True)
class _Names:
    """One release's ``Layout`` as the sets a stand-in checks a name against (built once: a proof makes ~10^5)."""

    on_req: frozenset[str]  # the Req's modeled attributes
    on_kv: frozenset[str]  # ReqKvInfo's modeled fields and properties
    kv_fields: frozenset[str]  # every ReqKvInfo field (slots)
    has_kv: bool  # the release has ``req.kv``
    lens_on_req: tuple[str, ...]  # ``_LENS`` the Req holds itself
    lens_on_kv: tuple[str, ...]  # ``_LENS`` its ReqKvInfo holds


@functools.cache
def _names(release: str) -> _Names:
    layout = LAYOUTS[release]
    return _Names(
        on_req=frozenset(layout.on_req),
        on_kv=frozenset((*layout.on_kv, *layout.kv_properties)),
        kv_fields=frozenset(layout.kv_fields),
        has_kv=layout.kv_class is not None,
        lens_on_req=tuple(k for k in _LENS if k in layout.on_req),
        lens_on_kv=tuple(k for k in _LENS if k in layout.on_kv),
    )


class _Strict:
    """Attributes in ``_values``; a missing one raises per the module docstring."""

    _release: str
    _what: str
    _present: frozenset[str]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        if name in _MODELED and name not in self._present:
            raise ReqAttributeMissing(
                f"sglang {self._release}'s {self._what} has no attribute {name!r} ({SCHEDULE_BATCH} {self._where()})"
            )
        raise StandInMissing(
            f"the write path reads {self._what}.{name}, which kvrow-fuzz's sglang {self._release} stand-in "
            "does not model"
        )

    def _where(self) -> str:
        return ""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(getattr(type(self), name, None), (property, _KvLen)):
            object.__setattr__(self, name, value)  # the harness's names (committed, allocated)
        else:
            self.__dict__["_values"][name] = value


class KvInfo(_Strict):
    """``req.kv``: the release's ``ReqKvInfo`` (a slots dataclass: only its fields can be set)."""

    def __init__(self, release: str, **values: Any) -> None:
        names = _names(release)
        self.__dict__.update(_release=release, _what="ReqKvInfo", _present=names.on_kv, _fields=names.kv_fields)
        self.__dict__["_values"] = values

    def _where(self) -> str:
        return f"class ReqKvInfo line {LAYOUTS[self._release].kv_class}"

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__dict__["_fields"]:
            raise ReqAttributeMissing(f"sglang {self._release}'s ReqKvInfo (slots) has no field {name!r}")
        super().__setattr__(name, value)

    @property
    def holds_kv(self) -> bool:
        """``req_pool_idx is not None`` [cite: req-kv-holds-kv]."""
        if "holds_kv" not in LAYOUTS[self._release].kv_properties:
            raise ReqAttributeMissing(f"sglang {self._release}'s ReqKvInfo has no attribute 'holds_kv'")
        return self.req_pool_idx is not None

    @property
    def holds_mamba(self) -> bool:
        """``mamba_pool_idx is not None`` [cite: req-kv-holds-mamba]."""
        if "holds_mamba" not in LAYOUTS[self._release].kv_properties:
            raise ReqAttributeMissing(f"sglang {self._release}'s ReqKvInfo has no attribute 'holds_mamba'")
        return self.mamba_pool_idx is not None

    def __repr__(self) -> str:
        return f"ReqKvInfo[{self._release}]({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"


class _KvLen:
    """One of the request's KV numbers by its SGLang name, on ``Req.kv`` where the release keeps it there (its
    ``ReqKvInfo``) and on ``Req`` itself otherwise: the harness reads and writes one name across every layout."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, req: None, owner: type | None = None) -> _KvLen: ...
    @overload
    def __get__(self, req: RequestStandIn, owner: type | None = None) -> int: ...
    def __get__(self, req: RequestStandIn | None, owner: type | None = None) -> int | _KvLen:
        if req is None:
            return self  # on the class: the descriptor itself (``_Strict.__setattr__`` looks for it)
        return int(getattr(self._holder(req), self.name))

    def __set__(self, req: RequestStandIn, value: int) -> None:
        setattr(self._holder(req), self.name, value)

    def _holder(self, req: RequestStandIn) -> Any:
        return req.kv if self.name in req._kv_names() else req


class RequestStandIn(_Strict):
    """A running request as one release's ``Req``; build with ``make_request``."""

    release: str  # set per release class (``request_class``)
    __sglang_stands_for__ = frozenset({"Req", "ReqDllmMixin", "object"})  # [cite: req-class]

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(_release=self.release, _what="Req", _present=_names(self.release).on_req)
        self.__dict__["_values"] = values

    def _where(self) -> str:
        return f"class Req line {LAYOUTS[self._release].req_class}"

    # The same names whatever the layout: what the lead's harness reads and writes.
    committed = _KvLen("kv_committed_len")
    allocated = _KvLen("kv_allocated_len")
    pool_idx = _KvLen("req_pool_idx")

    def _kv_names(self) -> dict[str, int]:
        return LAYOUTS[self._release].on_kv

    def __repr__(self) -> str:
        return (
            f"Req[{self._release}](row={self.pool_idx}, kv_committed_len={self.committed}, "
            f"kv_allocated_len={self.allocated})"
        )


_CLASSES: dict[str, type[RequestStandIn]] = {}


def request_class(version: str) -> type[RequestStandIn]:
    """The stand-in class of one release's ``Req`` (a version past the table: the newest layout before it)."""
    release = release_of(version)
    if release not in _CLASSES:
        _CLASSES[release] = type(f"Req_{release.replace('.', '_')}", (RequestStandIn,), {"release": release})
    return _CLASSES[release]


def make_request(
    version: str,
    req_pool_idx: int,
    kv_committed_len: int,
    kv_allocated_len: int,
    *,
    rid: str | int = 0,
    top_k: int = 1,
    decode_batch_idx: int = 0,
    cache_protected_len: int = 0,
) -> RequestStandIn:
    """A running request of sglang ``version`` holding row ``req_pool_idx``, its lengths where that release keeps them.

    ``top_k``: ``sampling_params.top_k`` (1: greedy; DFLASH and UNO read it, it never changes what is written).
    ``cache_protected_len``: the prefix the tree cache owns (0: none; freeing keeps [0, it)).
    """
    release = release_of(version)
    names = _names(release)
    lens: dict[str, Any] = dict(
        req_pool_idx=req_pool_idx,
        kv_committed_len=kv_committed_len,
        kv_allocated_len=kv_allocated_len,
        cache_protected_len=cache_protected_len,
        mamba_pool_idx=None,
        swa_evicted_seqlen=0,
        swa_evict_floor=0,
        component_evicted_seqlens={},
    )
    values: dict[str, Any] = dict(rid=rid, decode_batch_idx=decode_batch_idx, sampling_params=SamplingParams(top_k))
    values.update({k: lens[k] for k in names.lens_on_req})
    if names.has_kv:
        values["kv"] = KvInfo(release, **{k: lens[k] for k in names.lens_on_kv})
    return (_CLASSES.get(release) or request_class(release))(**values)

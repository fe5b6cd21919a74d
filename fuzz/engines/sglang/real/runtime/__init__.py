"""SGLang's own decode write path, run on CPU from a release's wheel (or a checkout, or the installed package).

tree       where SGLang's files come from (wheel, checkout, installed), bounded reads, linecache
inert      what an unexecuted SGLang name is, and where using one stops the run (StandInMissing)
modules    the loader: SGLang's module files executed unmodified in private modules
standins   the faithful answers (platform probes, sliced helpers, envs, accessors)
context    the runtime context / server args published per case
request    one Req stand-in per release (its KV lengths where that release keeps them)
batch      the ScheduleBatch / tree cache / ReqToTokenPool stand-ins the entries are handed
releases   the one table: modules, entry points, allocators, guards, checker per release
loaded     ``SGLangRuntime``: a release loaded, its allocators and sizing functions
writepath  ``decode_step``: one decode step on SGLang's own code; hooks ``verify``, ``after_decode``;
           ``batch_ownership``: one step of a batch of three, slot ownership judged
ownership  what the allocator hands out during a step, and whether each slot lands in its request's row
sites      every site of the executed files that writes req_to_token or hands out slots (an AST scan)
checks     SGLang's KV-page invariant checker; freeing a finished request
rows       req_to_token with guard rows; snapshot diffs
bounds     the time bound on every call into SGLang; the record of functions entered
validators SGLang's own launch checks executed (``boots``): the boot rules held to them
attention  a backend's CUDA-graph page tables built by SGLang's own backend (``graph_builds``: FA3, trtllm_mha);
           attention_inputs, what it is handed; attention_standins, the names only the backends take
"""

from .bounds import SGLangTimeout
from .checks import release_request, run_checker
from .context import Settings
from .loaded import SGLangRuntime
from .releases import RELEASES, Release, Where, kind_of
from .request import ReqAttributeMissing, RequestStandIn, make_request, request_class
from .rows import Rows, Span, changed_outside
from .tree import SourceTree, open_tree
from .writepath import (
    OVERLAP_ORDER,
    GuardStop,
    RequestOutcome,
    StepResult,
    StepTimeout,
    batch_ownership,
    decode_step,
    verify,
)

__all__ = [
    "OVERLAP_ORDER",
    "RELEASES",
    "GuardStop",
    "Release",
    "ReqAttributeMissing",
    "RequestOutcome",
    "RequestStandIn",
    "Rows",
    "SGLangRuntime",
    "SGLangTimeout",
    "Settings",
    "SourceTree",
    "Span",
    "StepResult",
    "StepTimeout",
    "Where",
    "batch_ownership",
    "changed_outside",
    "decode_step",
    "kind_of",
    "make_request",
    "open_tree",
    "release_request",
    "request_class",
    "run_checker",
    "verify",
]

"""A reference model of SGLang's KV-cache row bookkeeping.

``req_to_token`` as a real int32 tensor, a paged token-to-KV allocator whose
page follows the DCP branch, the sizing functions, the decode write paths per
speculative algorithm and the scheduler rules that bound how long a request
can get.  Historical bugs are ``revisions`` of the reference.
"""

from .algorithms import Algorithm
from .config import ConfigError, ServingConfig, SpecRuntime
from .model_sizing import ModelSizing
from .revisions import REFERENCE, REVISIONS, Headroom, Revision, get_revision

__all__ = [
    "Algorithm",
    "ConfigError",
    "ServingConfig",
    "SpecRuntime",
    "REFERENCE",
    "REVISIONS",
    "Headroom",
    "Revision",
    "get_revision",
    "ModelSizing",
]

"""Every SGLang file a target reads, as SGLang's repository names them (``paths``, through ``Engine.code_paths``).

The sizing module (``allocation_sizing.py``; ``mem_cache/common.py`` before
0.5.16), the file its pool builders and allocator pages are read from
(``kv_cache_configurator.py``; the ModelRunner mixin before 0.5.16), and,
where the target has its tree, every module of its release's decode write
path and of each backend's page-table builders (``runtime/releases.py``): a
change to any of them can change a verdict.
"""

from __future__ import annotations

from fuzz.common.errors import BadInput
from fuzz.engines.sglang.target_type import SGLangTarget

from ..backends import modules_of
from .real import RealSizing
from .runtime.dsa_index import INDEX_KEY_CACHE
from .runtime.dsa_index import MEMORY_POOL as DSA_POOL
from .runtime.releases import release_for
from .runtime.tree import open_tree
from .wheels import repository_path


def read_paths(target: SGLangTarget) -> list[str]:
    """The repository paths of every SGLang file ``target`` reads (sizing, builders, write path), in that order."""
    if not isinstance(target.sizing, RealSizing):
        raise BadInput(f"{target.spec} is a model target: it reads no SGLang file")
    module = target.sizing.module
    out = [repository_path(module.filename)]
    if module.builders_origin:
        out.append(repository_path(module.builders_origin))
    if module.tree_source:
        tree = open_tree(module.tree_source)
        release = release_for(tree.version)
        out += [f"python/{dotted.replace('.', '/')}.py" for dotted in release.modules]
        # each backend's page-table builders (its checked table), where the tree has them
        for modules in modules_of(release.version).values():
            members = (tree.module_member(d) for d in modules)  # a package: its __init__.py
            out += [f"python/{member}" for member in members if member is not None]
        # the DSA indexer's key cache: its pool's class (and, where the release has it, the cache's own)
        out += [f"python/{m}" for m in (DSA_POOL, INDEX_KEY_CACHE) if tree.has(m)]
    return list(dict.fromkeys(out))

"""A pool configurator in the shape of 0.5.23's ``mem_cache/kv_cache_configurator.py``, for the tests.

Written here in this project's words, not SGLang's code: the standard
builder sizes its rows with the sizing file's headroom (0.5.23
``kv_cache_configurator.py`` line 1572); the unified Mamba builder sets its
own ``extra_max_context_len`` = 4 + D (lines 884-886; the Mamba+SWA one the
same at 973-975); the unified SWA builder delegates to the standard one.
Never imported: ``fuzz.targets.sglang.builders`` slices it, and
``tests/test_sarif.py`` places it beside a sizing file.
"""


class KVCacheConfigurator:
    def _build_req_to_token_pool(self, *, max_num_reqs):
        extra_max_context_len = get_req_to_token_extra_context_len()  # noqa: F821 - sliced, never run here
        return make_pool(extra_max_context_len)  # noqa: F821

    def _init_unified_mamba_pools(self):
        setup_mamba()  # noqa: F821
        extra_max_context_len = 4
        if get_spec().speculative_num_draft_tokens is not None:  # noqa: F821
            extra_max_context_len += get_spec().speculative_num_draft_tokens  # noqa: F821
        build(extra_max_context_len)  # noqa: F821

    def _init_unified_swa_pools(self):
        return self._build_req_to_token_pool(max_num_reqs=1)

"""Root causes, the engine-neutral half: a cause's code identity (``identity``) and a baseline's verdict per case,
remembered (``known``).

An engine finds the causes of its findings (``Engine.root_causes``, the verdict pipeline's stage 4; SGLang's by
counterfactual, ``fuzz.engines.sglang.causes``); what is here serves every engine's causes and tables, so it
imports none.
"""

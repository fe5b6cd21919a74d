"""SGLang's root causes: which fix makes a finding's case pass (``counterfactual``, what ``Engine.root_causes``
answers: the verdict pipeline's stage 4).

The engine-neutral half (a cause's code identity, a baseline's verdict per case) is the core's ``fuzz.causes``.
"""

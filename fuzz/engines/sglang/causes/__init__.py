"""SGLang's root causes: which fix makes a finding's case pass (``counterfactual``, what ``Engine.root_causes``
answers: the verdict pipeline's stage 4), and the ``advisory`` command, an upstream-ready issue per cause
(``advisory``; its parser is the engine's ``cli``).

The engine-neutral half (a cause's code identity, a baseline's verdict per case) is the core's ``fuzz.causes``.
"""

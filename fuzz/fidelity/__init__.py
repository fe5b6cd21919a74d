"""``fidelity`` and ``matrix``: the model against real SGLang sizing code, release by release."""

"""SGLang's decode properties: the decode half of ``run`` (the command itself is the core's ``fuzz.run``).

properties  the four properties, each a check of one observed write
check       a decode scenario as the verdict pipeline's case, checked raw
coverage    the regime covering set, run before any search
engine      the decode campaign (the shared driver's ``Hunt``: ``Engine.hunt``)
replay      a decode case file replayed (and the validation every decode or lifecycle replay shares)

SGLang's own write path, which the properties also judge, is ``fuzz.engines.sglang.own_path``.
"""

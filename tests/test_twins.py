"""Every formula evaluated two ways agrees with itself: on ints and on tensors, and every twin with its pair.

``allocator_model.twins`` lists them (``SHARED``: one implementation on ints
and on tensors; ``TWINS``: the pairs that stay two implementations) with an
exhaustive small grid each; nothing here is random.
"""

import pytest

from allocator_model.twins import ALL_ENTRIES, SHARED, TWINS, Twin


@pytest.mark.parametrize("twin", ALL_ENTRIES, ids=[t.name for t in ALL_ENTRIES])
def test_twin_evaluations_agree(twin: Twin):
    n = 0
    for case in twin.cases():
        assert len(case.want) == len(case.got), case.label
        bad = [i for i, (w, g) in enumerate(zip(case.want, case.got, strict=True)) if w != g]
        assert not bad, (
            f"{twin.name}, {case.label}: {len(bad)} of {len(case.want)} differ; first: "
            f"input {case.inputs[bad[0]]}: int {case.want[bad[0]]}, tensor {case.got[bad[0]]}"
        )
        n += len(case.want)
    assert n >= 64, f"{twin.name}: only {n} comparisons"


def test_registry_names_are_unique_and_twins_are_pairs():
    names = [t.name for t in ALL_ENTRIES]
    assert len(set(names)) == len(names)
    assert all(t.scalar is t.tensor for t in SHARED) and all(t.scalar is not t.tensor for t in TWINS)

"""Every case file under fuzz/regressions/ still reproduces on its target and passes on the reference."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from fuzz.findings.casefile import load_document, replay, replay_document
from fuzz.findings.regression import emit_test, regression_files

FILES = regression_files()


def test_there_are_regressions_to_replay():
    assert FILES, "fuzz/regressions/ is empty"


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_case_file_reproduces_on_its_target(path):
    """The same group (signature), not only the same property, and the same story byte for byte."""
    wanted = load_document(path).get("signature")
    assert wanted, f"{path} has no signature: a regression names the group it pins"
    result = replay(path)
    assert result.reproduced and result.signature == wanted, (wanted, result.text)
    assert result.text == replay(path).text  # deterministic, byte for byte


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_case_file_passes_on_the_reference(path):
    doc = load_document(path)
    result = replay_document({**doc, "target": "reference"}, path)
    assert not result.reproduced, result.text


@pytest.mark.parametrize("path", FILES[:1], ids=[os.path.basename(p) for p in FILES[:1]])
def test_emitted_test_fails_the_same_way(path):
    namespace: dict = {}
    exec(compile(emit_test(load_document(path)), "<emitted>", "exec"), namespace)
    (fn,) = [v for k, v in namespace.items() if k.startswith("test_")]
    no_options = SimpleNamespace(config=SimpleNamespace(getoption=lambda name, default=None: default))
    with pytest.raises(AssertionError) as e:
        fn(no_options)  # its request: no --kvrow-target, so the case's own target
    assert replay(path).text in str(e.value)

"""Triton's draft kv_indices' advisory (issue 36): what ``advisory`` writes from 0.5.23's cases, with a fix judged.

The cases are ``run --profile ci --target sglang==0.5.23``'s of the table (each group's minimal and representative
case).  The fix judged is PR #29665's approach (the tables sized from the ``req_to_token`` row) applied to triton's
rows: ``pool_len`` instead of ``max_context_len`` where ``draft_kv_indices_buffer_width`` is called, an anchored edit
of 0.5.23's tree (``checkout_trees.UPSTREAM_FIXES["pr-29665-triton"]``) handed to the command as a patch.  The
shipped advisory (``docs/advisories/triton-draft-kv-indices-width.md``) is what the command writes;
``python tests/test_triton_advisory.py`` rewrites it.
"""

from __future__ import annotations

from shipped_advisories import SHIPPED, ShippedAdvisory

from fuzz.cli import main
from fuzz.findings.casefile import load_document, replay_document

CASES = SHIPPED / "cases" / "triton-draft-kv-indices"
ADVISORY = SHIPPED / "triton-draft-kv-indices-width.md"
THIS = ShippedAdvisory(CASES, ADVISORY, "0.5.23", {"PR #29665's approach on triton's rows": ("pr-29665-triton",)})


def test_the_shipped_triton_advisory_is_what_the_command_writes_with_the_fix(pinned_wheels, tmp_path, capsys):
    assert main(THIS.args(tmp_path / "out", tmp_path)) == 0
    assert "new: triton_draft_kv_indices-width" in capsys.readouterr().out
    assert (tmp_path / "out" / ADVISORY.name).read_text() == ADVISORY.read_text()
    text = ADVISORY.read_text()
    # the table's columns are token slots, whatever the page; the last step's row is published to no reader
    assert "4160 slots, one per token of the context" in text and "| slots read |" in text and " pages read" not in text
    assert "0 (no step reads this row)" in text and "into the next draft step's row" in text
    assert "**Closes every case: 12 of 12**" in text and "--attention-backend triton" in text


def test_the_shipped_cases_replay_with_their_confirmation(pinned_wheels):
    paths = sorted(CASES.glob("*.json"))
    assert len(paths) == 12
    for path in paths:
        doc = load_document(str(path))
        assert doc["kind"] == "table-case" and doc["case"]["table"] == "triton_draft_kv_indices"
        assert doc["sglang"].startswith("confirmed on SGLang's own triton builders")
        assert replay_document(doc).reproduced


if __name__ == "__main__":
    THIS.rewrite()


def test_a_table_cause_its_own_check_stops_is_said_to_crash_the_step_not_to_corrupt():
    """A table's advisory says what the outcome does: a write past the row that SGLang's own check stops (FlashInfer's
    draft rows: ``assert_buffer_fits``) crashes the step, nothing corrupted; a silent write and a read past the row
    are said to go unstopped."""
    from fuzz.engines.sglang.causes.table_advisory import outcome_text
    from fuzz.findings.kinds import SILENT, STALE_READ, Outcome, Property

    into = "the next draft step's row"
    stopped = outcome_text(Outcome.stopped_by("assert_buffer_fits"), Property.WRITE_WITHIN_ROW, into)
    assert "check assert_buffer_fits stops the step first" in stopped and "server crashes" in stopped
    assert "nothing stops it" not in stopped
    assert outcome_text(SILENT, Property.WRITE_WITHIN_ROW, into).endswith("nothing stops it")
    assert outcome_text(STALE_READ, Property.READ_WITHIN_ROW, into).startswith("the attention kernel reads past")

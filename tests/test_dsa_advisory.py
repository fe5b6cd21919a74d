"""The DSA indexer's key cache's advisory (issue 36): what ``advisory`` writes from 0.5.18's cases, with 0.5.22's fix.

0.5.22's sizing of the target pool's cache (``(size + page_size) * dcp_size - page_size``), as an anchored edit of
0.5.18's tree (``checkout_trees.UPSTREAM_FIXES["dsa-index-0.5.22"]``) handed to the command as the unified diff a
pull request holds, closes every case and every covering case.  The shipped advisory
(``docs/advisories/dsa-index-key-cache-width.md``) is what the command writes from the committed cases (``run``'s,
on ``sglang==0.5.18``: the minimal case and the representative one); ``python tests/test_dsa_advisory.py`` rewrites
it.
"""

from __future__ import annotations

from shipped_advisories import SHIPPED, ShippedAdvisory

from fuzz.cli import main
from fuzz.findings.casefile import load_document, replay_document

CASES = SHIPPED / "cases" / "dsa-index-key-cache"
ADVISORY = SHIPPED / "dsa-index-key-cache-width.md"
FIX = "0.5.22: the target pool's cache sized for the DCP allocator"
THIS = ShippedAdvisory(CASES, ADVISORY, "0.5.18", {FIX: ("dsa-index-0.5.22",)})


def test_the_shipped_dsa_advisory_is_what_the_command_writes_with_the_fix(pinned_wheels, tmp_path, capsys):
    assert main(THIS.args(tmp_path / "out", tmp_path)) == 0
    assert "new: dsa_index_key_cache-width" in capsys.readouterr().out
    assert (tmp_path / "out" / ADVISORY.name).read_text() == ADVISORY.read_text()
    text = ADVISORY.read_text()
    assert (
        "**Closes every case: 2 of 2**; none of its 7 covering cases fails" in text
        and "sgl-project/sglang#36990" in text
    )
    assert "SGLang's own DSA pool and allocator, executed" in text and "--dcp-size 2" in text


def test_the_shipped_cases_replay_with_their_confirmation(pinned_wheels):
    for path in sorted(CASES.glob("*.json")):
        doc = load_document(str(path))
        assert doc["kind"] == "table-case" and doc["sglang"].startswith("confirmed on SGLang's own DSATokenToKVPool")
        assert replay_document(doc).reproduced


if __name__ == "__main__":
    THIS.rewrite()

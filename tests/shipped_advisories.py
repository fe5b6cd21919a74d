"""The shipped advisories of tables checked on their own, each as the ``advisory`` command writes it: its committed
cases, the release they ran on and the fixes judged (anchored edits of ``checkout_trees``, handed over as the
patch a pull request holds).  A module's test holds the file to the command; running the module rewrites it."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from checkout_trees import patch_of

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "advisories"


@dataclass(frozen=True)
class ShippedAdvisory:
    cases: Path  # the committed case files
    advisory: Path  # the shipped Markdown
    release: str  # the release the cases ran on: each fix is a patch of its tree
    fixes: dict[str, tuple[str, ...]]  # a verdict's label -> the fixture's named fixes it applies

    def args(self, out: Path, patches: Path) -> list[str]:
        """``advisory``'s command line: written under ``out``, each fix's patch under ``patches``."""
        args = ["advisory", str(self.cases), "--out", str(out), "--cases", str(out / "cases")]
        for n, (label, named) in enumerate(self.fixes.items()):
            patch = patches / f"fix-{n}.patch"
            patch.write_text(patch_of(self.release, named))
            args += ["--fix", f"{label}={patch}"]
        return args

    def rewrite(self) -> None:
        """Write the shipped advisory afresh with the command (the module's test then holds it to it)."""
        from fuzz.cli import main

        with tempfile.TemporaryDirectory() as scratch:
            assert main(self.args(Path(scratch) / "out", Path(scratch))) == 0
            self.advisory.write_text((Path(scratch) / "out" / self.advisory.name).read_text())
        print(json.dumps({"written": str(self.advisory)}))

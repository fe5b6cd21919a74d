"""The one output stage every command hands its findings to: case files, the JSON report, SARIF, the exit status.

``Output`` checks the command's output paths before any work (one line and
exit 2 if one cannot be written), then writes each thing atomically as it
comes.  A write that fails later (a full disk, a directory gone) is one line
on stderr naming the file and why, and the command keeps going with what it
can still write: findings already on disk stay, the next ones are tried
again, and the exit status still says what was found.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from fuzz.common.errors import ExitCode
from fuzz.common.files import write_atomically
from fuzz.common.options import check_outputs
from fuzz.common.streams import LOST
from fuzz.common.text import printable

from . import casefile
from .cause import Cause
from .model import Finding
from .report import Command, report_document

T = TypeVar("T")


def write_failed(path: str, what: str, error: BaseException) -> None:
    """The one line a failed write is: which file, what it was for, why; remembered as lost (``LOST``), so a
    command that found nothing but could not write its report does not exit 0."""
    LOST.add(f"{what} {path}")
    why = getattr(error, "strerror", None) or str(error) or type(error).__name__
    print(f"fuzz: could not write {what} {printable(path, 300)}: {printable(why, 200)}", file=sys.stderr, flush=True)


def guarded(path: str, what: str, write: Callable[[], Any]) -> bool:
    """Run ``write``; on an OSError (ENOSPC, EIO, a vanished directory) say so in one line and go on."""
    try:
        write()
    except OSError as e:
        write_failed(path, what, e)
        return False
    return True


def save_case(f: Finding, directory: str, origin: str | None = None) -> str | None:
    """Write ``f``'s case file (``casefile.save``), and its representative case's beside it where one was found
    (``casefile.REPRESENTATIVE``); None, with one line on stderr, if ``f``'s could not be written."""
    path = casefile.case_file_name(casefile.document(f), origin)
    ok = guarded(f"{directory}/{path}", "the case file", lambda: casefile.save(f, directory, origin))
    found = f.search.found if f.search is not None else None
    if ok and found is not None:  # the group's representative case: a case file of its own, replayed as any
        kept = casefile.case_file_name(casefile.document(found), casefile.REPRESENTATIVE)
        guarded(
            f"{directory}/{kept}", "the case file", lambda: casefile.save(found, directory, casefile.REPRESENTATIVE)
        )
    return f.case_path if ok else None


class Output:
    """Where one command's results go (``--cases``, ``--json``, ``--sarif`` and any other output files named)."""

    def __init__(self, args: argparse.Namespace, command: Command, *files: str) -> None:
        check_outputs(args, *files)
        self.command = command
        self.cases: str = args.cases
        self.json: str | None = args.json
        self.sarif: str | None = args.sarif
        self.failed = 0  # writes that did not happen

    def _count(self, ok: bool) -> bool:
        self.failed += not ok
        return ok

    def save(self, f: Finding, origin: str | None = None) -> str | None:
        """The finding's case file, first of all (findings reach disk before anything is printed of them)."""
        path = save_case(f, self.cases, origin)
        self._count(path is not None)
        return path

    def write(self, path: str, text: str, what: str) -> bool:
        """Any other output file, atomically."""

        def put() -> bool:
            write_atomically(path, text)
            return True

        return self.attempt(path, what, put) is not None

    def attempt(self, path: str, what: str, write: Callable[[], T]) -> T | None:
        """What ``write`` returns, having put an output on disk itself (atomically: a heatmap and its table);
        None, with one line on stderr, if it could not."""
        done: list[T] = []
        ok = self._count(guarded(path, what, lambda: done.append(write())))
        return done[0] if ok else None

    def report(self, entries: list[dict[str, Any]], **fields: Any) -> None:
        """``--json``: the shared report (rewritten whole each time)."""
        if self.json:
            import json

            text = json.dumps(report_document(self.command, entries, **fields), indent=2) + "\n"
            self.write(self.json, text, "the report")

    def sarif_log(
        self, findings: Iterable[Finding], targets: list[Any], causes: dict[str, list[Cause]] | None = None
    ) -> None:
        """``--sarif``: one result per root cause (``causes``: target spec -> its causes), at the code it
        indicts, its variants listed; a group no cause holds is a result of its own."""
        if self.sarif:
            from .sarif import by_cause, sarif_text, with_targets

            pairs = by_cause(with_targets(list(findings), targets), causes or {})
            text = sarif_text(self.command, pairs)
            self.write(self.sarif, text, "the SARIF log")

    @staticmethod
    def status(*, found: bool, interrupted: bool = False, error: bool = False) -> ExitCode:
        """1 when anything was found (interrupted or not), 130 interrupted with nothing, 2 an error, else 0."""
        if found:
            return ExitCode.FOUND
        if interrupted:
            return ExitCode.INTERRUPTED
        return ExitCode.BAD_INPUT if error else ExitCode.CLEAN

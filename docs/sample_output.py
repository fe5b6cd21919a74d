"""The documentation's sample output, regenerated from the commands themselves.

    python docs/sample_output.py            # rewrite every sample block of README.md and docs/*.md
    python docs/sample_output.py --check    # exit 1 with a diff where a file differs (nothing written)
    python docs/sample_output.py --only repro-0.5.18 targets
    python docs/sample_output.py --file docs/proof.md    # that file's blocks only (repeatable; --readme is the same)

A sample is the block between ``<!-- sample: NAME: COMMAND -->`` and ``<!-- /sample -->`` in README.md or in one of
docs/*.md, the page whose text it illustrates: the standard output of ``kvrow-fuzz COMMAND`` (``fuzz.cli.main``,
in this process, in a fresh working directory: case files land in ``fuzz-cases/`` as a user's would), cut to the
lines the page shows (``...`` marks lines left out) and made the same on every machine by ``normalise``: timings
read ``…``, the working directory and the wheel cache their usual names, and a repro line's program ``kvrow-fuzz``
(what it prints where the tool is on the PATH; elsewhere the full path of the same script).  Everything else is
the command's output as it is, so a block edited by hand, or a change of the output, makes ``--check`` (and
``tests/test_readme_samples.py``) fail.  Each sample has exactly one block among the files: a block in two files,
or a sample in none, is an error (exit 2), as is a block without its end or of no sample.

Samples marked ``slow`` run whole campaigns or read the real SGLang wheels (the wheel cache ``./kvrow test``
fills): the slow test tier checks them; the others are checked by the default tier.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ELLIPSIS = "…"  # a timing: different on every run
CUT = "..."  # lines of the output the page leaves out
CLOSE = "<!-- /sample -->"
OPEN = re.compile(r"^<!-- sample: (?P<name>[\w.-]+)(?::[^\n]*)? -->$", re.M)
SECONDS = re.compile(r"(?<![\w.])\d+(?:\.\d+)?s\b")
TABLE_HEAD = re.compile(r"^target\s+status\s+examples\s+seconds\b")


Part = Callable[[list[str]], range]  # which lines of a command's output a sample shows


def lines_from(start: str, stop: Callable[[str], bool] | None = None) -> Part:
    """The lines from the first that starts with ``start`` up to (not including) the next one ``stop`` accepts
    (else to the end)."""

    def part(lines: list[str]) -> range:
        first = next((i for i, line in enumerate(lines) if line.startswith(start)), None)
        if first is None:
            raise ValueError(f"the output has no line that starts with {start!r}: the sample's cut needs one")
        end = next((i for i in range(first + 1, len(lines)) if stop and stop(lines[i])), len(lines))
        return range(first, end)

    return part


def whole(lines: list[str]) -> range:
    return range(len(lines))


header = lines_from("", lambda line: line.startswith(("ROOT CAUSES ", "COUNTEREXAMPLE ")))  # before the findings
summary = lines_from("target ")  # the summary table at the end
root_causes = lines_from("ROOT CAUSES ", lambda line: not line.strip())  # and the lines after it, to the table
causes_line = lines_from("ROOT CAUSES ", lambda line: True)  # the section's summary line alone
CAUSE = re.compile(r"^  \d+\. ")  # a cause's numbered heading; its lines below are indented further


def lead_block(signature: str, through: str) -> Part:
    """The lead block of ``signature``'s cause, from its COUNTEREXAMPLE line to its first line that contains
    ``through``."""

    def part(lines: list[str]) -> range:
        head = f"COUNTEREXAMPLE {signature} on "
        at = next((i for i, line in enumerate(lines) if line.lstrip().startswith(head)), None)
        if at is None:
            raise ValueError(f"the output has no block {head!r}: the sample's cut needs one")
        end = next(i for i in range(at, len(lines)) if through in lines[i])
        return range(at, end + 1)

    return part


def lead_repro(signature: str) -> Part:
    """The repro line of the lead block of ``signature``'s cause."""

    def part(lines: list[str]) -> range:
        at = lead_block(signature, "COUNTEREXAMPLE ")(lines).start
        end = next(i for i in range(at, len(lines)) if lines[i].lstrip().startswith("repro: "))
        return range(end, end + 1)

    return part


def joined(*parts: Part) -> Callable[[list[str]], list[str]]:
    """The parts in turn; between two that are not adjacent, ``...`` (or the blank lines that separate them)."""

    def cut(lines: list[str]) -> list[str]:
        out: list[str] = []
        last = None
        for part in parts:
            span = part(lines)
            if last is not None and span.start != last:
                gap = lines[last : span.start]
                out.extend(gap if not any(line.strip() for line in gap) else [CUT])
            out.extend(lines[i] for i in span)
            last = span.stop
        return out

    return cut


@dataclass(frozen=True)
class Sample:
    """One sample block: the output of ``kvrow-fuzz ARGV`` cut by ``cut``; ``after``: samples whose commands
    run first in the same directory (a repro needs the case file the run wrote); ``slow``: the slow tier's."""

    name: str
    argv: tuple[str, ...]
    cut: Callable[[list[str]], list[str]] = joined(whole)
    after: tuple[str, ...] = ()
    slow: bool = False

    @property
    def command(self) -> str:
        return "kvrow-fuzz " + shlex.join(self.argv)


RUN_0518 = ("run", "--target", "reference@sglang-0.5.18", "--profile", "ci")
CASE_0518 = "fuzz-cases/reference-sglang-0.5.18--write-within-row-dcp-1.json"
SEED = "write-within-row/dcp>1"  # the seed bug's group: the README's first screen shows its block
SAMPLES: tuple[Sample, ...] = (
    Sample(
        "run-0.5.18",
        RUN_0518,
        joined(causes_line, lead_block(SEED, "victim: "), lead_repro(SEED), summary),
    ),
    Sample("run-reference", ("run", "--target", "reference", "--profile", "ci"), slow=True),
    Sample("targets", ("targets",)),
    Sample("repro-0.5.18", ("repro", CASE_0518), after=("run-0.5.18",)),
    Sample("root-causes-0.5.18", (*RUN_0518, "--quiet")),
    Sample(
        "run-sglang-0.5.23",
        ("run", "--target", "sglang==0.5.23", "--profile", "ci"),
        joined(header, root_causes, summary),
        slow=True,
    ),
    Sample("prove-reference", ("prove", "--target", "reference"), slow=True),
)
BY_NAME = {s.name: s for s in SAMPLES}


def normalise(text: str, workdir: str) -> str:
    """The output made the same on every machine: the program as a repro line starts it by its name ``kvrow-fuzz``
    (the line names this installation's entry script by its full path where ``kvrow-fuzz`` is not on the PATH:
    ``fuzz.common.program``), the working directory and the wheel cache by their usual names, the home directory
    ``~``, every timing (``35.1s``, the summary's seconds column) ``…``."""
    from fuzz.common.program import PROG, shell_command
    from fuzz.engines.sglang.real.wheels import cache_dir

    text = text.replace(f"{shell_command()} repro ", f"{PROG} repro ")
    text = text.replace(cache_dir(), "~/.cache/kvrow-fuzz/wheels")
    text = text.replace(workdir + os.sep, "").replace(workdir, ".")
    home = os.path.expanduser("~")
    if len(home) > 1:
        text = text.replace(home + os.sep, "~" + os.sep)
    text = SECONDS.sub(ELLIPSIS + "s", text)
    return "\n".join(_table_seconds(text.splitlines()))


def _table_seconds(lines: Iterable[str]) -> Iterator[str]:
    """The summary table's seconds column (right-aligned under its header) as ``…``."""
    end = None
    for line in lines:
        if TABLE_HEAD.match(line):
            end = line.index("seconds") + len("seconds")
        elif end is not None and line.strip():
            number = re.search(r"\d+(?:\.\d+)?$", line[:end])
            if number:
                line = line[: number.start()] + ELLIPSIS.rjust(len(number.group())) + line[end:]
        else:
            end = None
        yield line


@contextlib.contextmanager
def as_named_program() -> Iterator[None]:
    """Repro lines start ``kvrow-fuzz repro`` while the block runs (``fuzz.findings.repro`` reads the program from
    ``fuzz.common.program.shell_command``, replaced here by the name)."""
    from fuzz.common.program import PROG
    from fuzz.findings import repro

    real = repro.shell_command
    repro.shell_command = lambda: PROG  # type: ignore[assignment]
    try:
        yield
    finally:
        repro.shell_command = real  # type: ignore[assignment]


class Session:
    """Runs each command once, in one fresh working directory, and keeps its standard output."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.outputs: dict[tuple[str, ...], str] = {}

    def output(self, sample: Sample) -> str:
        for name in sample.after:
            self.output(BY_NAME[name])
        if sample.argv not in self.outputs:
            self.outputs[sample.argv] = normalise(self._run(sample.argv), self.workdir)
        return self.outputs[sample.argv]

    def _run(self, argv: tuple[str, ...]) -> str:
        from fuzz.cli import main

        out, err = io.StringIO(), io.StringIO()  # stderr (progress lines, elapsed time) is not shown
        here = os.getcwd()
        os.chdir(self.workdir)
        try:
            # The program as the reader runs it, by its name: a repro line's width (and so where it is broken)
            # is then the same on every machine, whatever path this installation's script has.
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), as_named_program():
                status = main(list(argv))
        finally:
            os.chdir(here)
        if status not in (0, 1):
            raise RuntimeError(f"kvrow-fuzz {shlex.join(argv)} exited {status}: {err.getvalue().strip()[-500:]}")
        return out.getvalue()

    def block(self, sample: Sample) -> str:
        """The block of ``sample``, markers included."""
        body = "\n".join(f"    {line}".rstrip() for line in sample.cut(self.output(sample).splitlines()))
        return f"<!-- sample: {sample.name}: {sample.command} -->\n\n{body}\n\n{CLOSE}"


@contextlib.contextmanager
def session() -> Iterator[Session]:
    with tempfile.TemporaryDirectory(prefix="kvrow-samples-") as workdir:
        yield Session(os.path.realpath(workdir))


def documents() -> list[Path]:
    """The files sample blocks may live in: README.md, then docs/*.md in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(text: str) -> dict[str, tuple[int, int]]:
    """Each sample block of a page: its name -> (start, end) offsets, markers included; ValueError on a
    block without its closing marker, a name used twice or not in ``SAMPLES``."""
    found: dict[str, tuple[int, int]] = {}
    for m in OPEN.finditer(text):
        name = m["name"]
        end = text.find(CLOSE, m.end())
        if end < 0 or OPEN.search(text, m.end(), end):
            raise ValueError(f"sample {name}: no {CLOSE} before the next sample")
        if name in found or name not in BY_NAME:
            raise ValueError(f"sample {name}: {'named twice' if name in found else 'not a sample of this script'}")
        found[name] = (m.start(), end + len(CLOSE))
    return found


def placed(texts: dict[Path, str]) -> dict[str, Path]:
    """Each sample block's file, among ``texts`` (a file -> its text); ValueError on a bad block (``blocks``) or
    a sample with a block in two files: one sample is one block, in the page whose text it illustrates."""
    where: dict[str, Path] = {}
    for path, text in texts.items():
        try:
            names = blocks(text)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        for name in names:
            if name in where:
                raise ValueError(f"sample {name}: a block in {where[name]} and another in {path}")
            where[name] = path
    return where


def rewrite(text: str, new: dict[str, str]) -> str:
    """``text`` with those of its blocks named in ``new`` replaced by theirs (a name it has no block of is
    another file's)."""
    spans = blocks(text)
    for name in sorted((n for n in new if n in spans), key=lambda n: spans[n][0], reverse=True):
        start, end = spans[name]
        text = text[:start] + new[name] + text[end:]
    return text


TABLE_RULE = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+$")


def align_tables(text: str) -> str:
    """Every Markdown table of ``text`` with its columns padded to one width, so the pipes line up."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.extend(_aligned(lines[i:j]))
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _cells(row: str) -> list[str]:
    """A table row's cells, stripped; a pipe inside backticks or escaped (``\\|``) is the cell's."""
    cells, cell, code = [], "", False
    for n, ch in enumerate(row.strip()[1:-1]):
        if ch == "|" and not code and row.strip()[n] != "\\":
            cells.append(cell.strip())
            cell = ""
            continue
        code ^= ch == "`"
        cell += ch
    return [*cells, cell.strip()]


def _aligned(rows: list[str]) -> list[str]:
    table = [_cells(row) for row in rows]
    if len({len(cells) for cells in table}) != 1:
        return rows  # a row with more or fewer cells: not ours to guess
    body = table[:1] + table[2:]
    widths = [max(3, *(len(cells[k]) for cells in body)) for k in range(len(table[0]))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    return [line(table[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, table[2:])]


def diff(old: str, new: str, path: str = "README.md") -> str:
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{path} (as it is)", f"{path} (regenerated)")
    )


def regenerated(names: Iterable[str]) -> dict[str, str]:
    """The blocks of the samples ``names``, their commands run again (in one working directory)."""
    with session() as s:
        return {name: s.block(BY_NAME[name]) for name in names}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Regenerate (or --check) the sample output blocks of README.md and docs/.")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff where a file differs")
    p.add_argument("--only", nargs="+", metavar="NAME", choices=list(BY_NAME), help="these samples only")
    p.add_argument(
        "--file",
        "--readme",
        dest="files",
        type=Path,
        action="append",
        metavar="FILE",
        help="a file whose blocks to rewrite, repeatable (default: README.md and docs/*.md)",
    )
    args = p.parse_args(argv)
    texts = {path: path.read_text() for path in args.files or documents()}
    try:
        where = placed(texts)
    except ValueError as e:
        print(f"sample_output: error: {e}", file=sys.stderr)
        return 2
    names = args.only or [s.name for s in SAMPLES]
    missing = sorted(set(names) - set(where))
    if missing:
        files = ", ".join(map(str, texts))
        print(f"sample_output: error: no block for {', '.join(missing)} in {files}", file=sys.stderr)
        return 2
    new_blocks = regenerated(names)
    changed = {path: new for path, text in texts.items() if (new := align_tables(rewrite(text, new_blocks))) != text}
    for path, new in changed.items():
        if args.check:
            print(diff(texts[path], new, str(path)), end="")
        else:
            path.write_text(new)
            print(f"sample_output: rewrote {path}", file=sys.stderr)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

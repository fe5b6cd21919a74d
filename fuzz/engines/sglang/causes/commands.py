"""The executors of ``advisory`` and ``judge-fix`` (their parsers: ``fuzz.engines.sglang.cli``).

``advisory CASE-or-REPORT... [--fix [LABEL=]PATCH_OR_CHECKOUT]...``: one Markdown advisory per root cause
(``advisory``), each carrying the verdict of every fix given (``fixjudge``). Exit 0: written; 1: no case
reproduces; 2: bad input.

``judge-fix CASE-or-REPORT... --fix [LABEL=]PATCH_OR_CHECKOUT``: every case of each root cause in the inputs
(``--cause KEY``: of that one) replayed on the fixed code, then the cause's covering set. Exit 0: the fix closes
every case; 1: it leaves some (each listed with its repro line); 2: bad input, one line: a case ``repro`` refuses,
a patch that does not apply (both told before any case runs), no case that fails on its target.

Both resolve each target once (``one_target_per_spec``): every case of a target shares what it loaded.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.files import check_output_dir, write_atomically
from fuzz.common.text import printable
from fuzz.engines.sglang.decode.replay import ReplayableCase
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings import casefile
from fuzz.targets.resolve import one_target_per_spec, resolve_targets

from .advisory import advisories, render, validated
from .advisory_parts import Advisory
from .fixed_tree import Fix, FixedCode, check_tree_dir, fixed_code, parse_fix, removed, repro_target, temporary_tree
from .fixjudge import FixVerdict, fix_section, judge, verdict_lines
from .inputs import check_count, documents

Made = tuple[Fix, FixedCode, str]  # a fix, its fixed code, the --target its repro lines give


def _validated(args: argparse.Namespace, what: str) -> list[tuple[str, ReplayableCase]]:
    """The inputs' cases, every one validated as ``repro`` validates it, none run yet."""
    if args.target is not None and resolve_targets([args.target])[0].is_model:
        raise BadInput(
            f"--target {printable(args.target, 200)}: this tool's model, not SGLang: {what} (sglang==X.Y.Z, sglang, "
            "or a checkout PATH[@X.Y.Z])"
        )
    docs = [doc for path in args.inputs for doc in documents(path)]
    if not docs:
        raise BadInput("no case in the inputs (case files, directories of them, or JSON reports)")
    check_count(len(docs), "the inputs")
    return validated(docs, args.target, print)


def _base(cases: list[tuple[str, ReplayableCase]]) -> SGLangTarget:
    """The one target the cases run on (``--target`` makes it one): what a fix is applied to and judged against."""
    targets = {case.target.spec: case.target for _, case in cases}
    if len(targets) != 1:
        raise BadInput(
            f"the cases run on {len(targets)} targets ({printable(', '.join(sorted(targets)), 300)}): a fix is "
            "judged against one; name it with --target"
        )
    return cast(SGLangTarget, next(iter(targets.values())))


@contextmanager
def _made(fixes: list[Fix], base: SGLangTarget, tree: str | None) -> Iterator[list[Made]]:
    """Each fix's fixed code, made before any case runs (a patch applied to a copy of ``base``'s tree: in ``tree``
    where given and kept, else in a temporary directory removed on the way out)."""
    temporary: list[str] = []
    try:
        made = []
        for fix in fixes:
            where = tree if tree is not None or not fix.is_patch else temporary_tree()
            if where is not None and where != tree:
                temporary.append(where)
            fixed = fixed_code(fix, base, where)
            shown = "a temporary copy, removed at the end" if where in temporary else printable(fixed.spec, 300)
            print(f"fix {printable(fix.label, 200)}: {fixed.made}: {shown}")
            for outside in fixed.outside:
                print(f"  not applied: {printable(outside, 300)} (outside python/sglang/: not code the cases run)")
            made.append((fix, fixed, repro_target(fixed, where not in temporary)))
        yield made
    finally:
        for path in temporary:
            removed(path)


def _judged(made: list[Made], found: list[Advisory], base: SGLangTarget, cases: str) -> list[FixVerdict]:
    verdicts = []
    for fix, fixed, target in made:
        print(f"judging {printable(fix.label, 200)} on the fixed code", flush=True)
        for adv in found:
            verdicts.append(judge(adv, fix, fixed, base.spec, target, cases))
            print("\n".join(verdict_lines(verdicts[-1])), flush=True)
        if fixed.repro_target != target:
            print(f"  (repro lines: {target} is a checkout of {base.spec} with the patch applied)")
    return verdicts


def cmd_advisory(args: argparse.Namespace) -> ExitCode:
    with one_target_per_spec():  # every case of a target, and the fixed code, share one resolution of it
        return _advisory(args)


def _advisory(args: argparse.Namespace) -> ExitCode:
    check_output_dir(args.out, "--out")
    fixes = [parse_fix(arg) for arg in args.fix or []]
    if fixes:
        check_output_dir(args.cases, "--cases")
    cases = _validated(args, "an advisory is written for a real target only")
    base = _base(cases) if fixes else None
    with _made(fixes, base, None) if base is not None else _nothing() as made:
        found = advisories(cases, print)
        if not found:
            print("no case reproduces on its target: nothing to write")
            return ExitCode.FOUND
        judged: dict[str, list[FixVerdict]] = {}
        for v in _judged(made, found, base, args.cases) if base is not None else []:
            judged.setdefault(v.cause_key, []).append(v)
    os.makedirs(args.out, exist_ok=True)
    for adv in found:
        path = os.path.join(args.out, f"{casefile.slug(adv.cause.key)}.md")
        section = fix_section(judged.get(adv.cause.key, []), base.spec if base is not None else "")
        write_atomically(path, render(adv, section))
        print(f"{adv.cause.label}: {printable(path)} ({sum(len(v) for v in adv.findings.values())} case(s))")
    return ExitCode.CLEAN


@contextmanager
def _nothing() -> Iterator[list[Made]]:
    yield []


def cmd_judge_fix(args: argparse.Namespace) -> ExitCode:
    with one_target_per_spec():
        return _judge_fix(args)


def _judge_fix(args: argparse.Namespace) -> ExitCode:
    check_output_dir(args.cases, "--cases")
    fix = parse_fix(args.fix)
    if args.tree is not None:
        if not fix.is_patch:
            raise BadInput("--tree: where a patch is applied; the fix given is a checkout already")
        check_tree_dir(args.tree)
    cases = _validated(args, "a fix is judged on a real target only")
    base = _base(cases)
    with _made([fix], base, args.tree) as made:
        found = advisories(cases, print)
        if args.cause is not None:
            keys = [adv.cause.key for adv in found]
            found = [adv for adv in found if adv.cause.key == args.cause]
            if not found:
                raise BadInput(
                    f"--cause {printable(args.cause, 200)}: the inputs' causes are {', '.join(keys) or 'none'}"
                )
        if not found:
            raise BadInput("no case of the inputs fails on its target: nothing for a fix to close")
        verdicts = _judged(made, found, base, args.cases)
    closes = all(v.closes for v in verdicts)
    print(f"verdict: {printable(fix.label, 200)} " + ("closes every case" if closes else "leaves cases open"))
    return ExitCode.CLEAN if closes else ExitCode.FOUND

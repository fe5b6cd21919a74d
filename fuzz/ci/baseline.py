"""``kvrow-fuzz baseline write FILE --target SPEC | --releases RANGE``: record root causes as known findings.

The campaign ``run`` runs (its proof stage first, the profile's search after,
SGLang's write path where the target has it), its findings grouped by root
cause (``Engine.root_causes``), and each cause's entries (property, qualified
function, repository path: ``fuzz.findings.baseline``) written to FILE. Then
``run``/``lifecycle``/``prove --baseline FILE`` fail only on causes not in
it. ``--releases``: that campaign on each SGLang release of the range (as
its engine expands a range, ``Engine.releases``: the one expansion ``matrix``
reads too), one document: each entry with the releases where it was found,
required there (``matrix --expect FILE`` reports MISSING for a release that
no longer shows it), and with ``--allow OTHER`` the entries of another
baseline (one written with more examples, another seed) allowed where this
run did not find them. Exit 0: written (also when the target is clean: an
empty baseline); 2: bad input.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.files import check_output_file, write_atomically
from fuzz.common.options import (
    PROFILE_NAMES,
    SGLANG_VERSION_HELP,
    TARGETS_HELP,
    add_command,
    campaign_settings,
    positive_int,
)


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "baseline",
        "record a target's root causes as known findings (baseline write FILE --target SPEC)",
        "Record a target's (or each release's) root causes as known findings, for --baseline and matrix --expect. "
        "Exit 0: written; 2: bad input.",
        cmd_baseline,
    )
    p.add_argument(
        "action",
        choices=("write", "upgrade"),
        help="write: run the campaign and record its causes; upgrade: a version 1 FILE (keyed by place) rewritten as "
        "version 2 (keyed by root cause): the campaign of its target (each of its releases) run again, each cause "
        "the old file knew recorded by its identity",
    )
    p.add_argument("file", metavar="FILE", help="the baseline to write (JSON); upgrade: the one to upgrade, in place")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--target", metavar="SPEC", help=TARGETS_HELP)
    what.add_argument(
        "--releases",
        metavar="RANGE",
        help="instead of --target: each SGLang release of RANGE (0.5.13..0.5.23 or 0.5.18,0.5.19), one document: "
        "each entry with the releases where it was found, required there (for matrix --expect)",
    )
    p.add_argument(
        "--allow",
        metavar="BASELINE",
        help="with --releases: this baseline's entries are allowed (not required) at its releases in RANGE where "
        "the campaign did not find them (e.g. one written with --profile nightly)",
    )
    p.add_argument("--profile", choices=PROFILE_NAMES, default="ci", help="the campaign's (default ci)")
    p.add_argument("--max-examples", type=positive_int, metavar="N", help="examples per round (overrides the profile)")
    p.add_argument("--write-path", choices=("auto", "sglang", "model"), default="auto", help="as run's (default auto)")
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def cmd_baseline(args: argparse.Namespace) -> ExitCode:
    check_output_file(args.file, "FILE")
    if args.action == "upgrade":
        if args.target or args.releases or args.allow:
            raise BadInput("upgrade takes FILE alone (its target and releases are the file's)")
        return upgrade(args)
    if args.target is None and args.releases is None:
        raise BadInput("write needs one of the arguments --target --releases")
    if args.releases is None:
        if args.allow:
            raise BadInput("--allow is for --releases (a document over releases)")
        return write_target(args)
    return write_releases(args)


def causes_of(spec: str, args: argparse.Namespace, version: str | None = None) -> tuple[str, list[Any]]:
    """(the target's portable name, ``baseline.portable_target``: never an absolute local path; its root causes):
    the campaign ``run`` runs (``fuzz.run.cli.fuzz_decode``: its engine's hunt with its proof stage, and the hunts of
    the tables checked on their own), with this command's settings."""
    from fuzz.engines import engine_of
    from fuzz.findings.baseline import portable_target
    from fuzz.run.cli import fuzz_decode
    from fuzz.targets.resolve import resolve_targets
    from fuzz.verdict import PIPELINE

    (target,) = resolve_targets([spec], version)
    args.seed = None
    _, hyp, seed = campaign_settings(args)
    engine_of(target).has_own_path(target, args.write_path)  # asked for its own code and it cannot: exit 2
    result = fuzz_decode(target, hyp, seed, (0, 1), {}, {"write_path": args.write_path}, {})
    if result.error:
        raise BadInput(f"{target.spec}: the campaign failed: {result.error}")
    return portable_target(target), PIPELINE.causes(target, result.findings)


def write_target(args: argparse.Namespace) -> ExitCode:
    from fuzz.findings import baseline

    spec, causes = causes_of(args.target, args, args.sglang_version)
    write_atomically(args.file, baseline.text(spec, causes))
    entries = len(baseline.document(spec, causes)["entries"])
    print(f"{args.file}: {len(causes)} root cause(s) of {spec}, {entries} entr(ies)")
    for c in causes:
        print(f"  {c.label}: {c.title}")
    return ExitCode.CLEAN


def write_releases(args: argparse.Namespace) -> ExitCode:
    """One document over the releases: what each release's campaign found (required), ``--allow``'s (allowed)."""
    from fuzz.engines import load
    from fuzz.findings import baseline

    if args.sglang_version:
        raise BadInput("--sglang-version is for --target (each release of --releases has its own)")
    engine = load(baseline.RELEASES_TARGET)  # the engine whose releases a document over releases covers: its target
    try:
        releases = engine.releases(args.releases)
    except ValueError as e:
        raise BadInput(f"--releases: {e}") from None
    try:
        allowed = baseline.load(args.allow, "--allow") if args.allow else None
    except baseline.BaselineError as e:
        raise BadInput(str(e)) from None
    found: dict[str, dict[baseline.Entry, bool]] = {}
    for release in releases:
        started = time.monotonic()
        _, causes = causes_of(f"sglang=={release}", args)
        found[release] = dict.fromkeys(baseline.made_by(causes), True)
        extra = allowed.expected(release).entries - found[release].keys() if allowed else frozenset()
        found[release].update(dict.fromkeys(extra, False))
        if not args.quiet:
            labels = ", ".join(c.label for c in causes) or "clean"
            print(
                f"[{release}] {len(causes)} root cause(s) ({labels}), {len(found[release]) - len(extra)} entr(ies) "
                f"required, {len(extra)} allowed, {time.monotonic() - started:.0f}s",
                flush=True,
            )
    doc = baseline.releases_document(baseline.RELEASES_TARGET, found, describe(args))
    write_atomically(args.file, baseline.dumps(doc))
    required = sum(1 for e in doc["entries"] if e["required"])
    print(f"{args.file}: {len(releases)} release(s), {len(doc['entries'])} entr(ies), {required} required")
    return ExitCode.CLEAN


def describe(args: argparse.Namespace, releases: str | None = None) -> str:
    """The document's description: how it was written and what its fields mean to ``matrix --expect``."""
    from fuzz.findings import baseline

    how = f"{releases or f'--releases {args.releases}'} --profile {args.profile}"
    how += f" --max-examples {args.max_examples}" if args.max_examples else ""
    how += f" --allow {os.path.basename(args.allow)}" if getattr(args, "allow", None) else ""
    text = (
        f"Written by `kvrow-fuzz baseline {args.action} FILE {how}`. Each entry is a root cause's identity "
        "(a known fix's key; a new cause's function, path, differing term and code digest), its property and "
        "table, and the releases where it is expected; required: `matrix --expect` reports MISSING (the tool "
        "regressed) for such a release that no longer shows it; a cause making an entry not listed for its "
        "release is NEW (a new finding)."
    )
    return text[: baseline.MAX_DESCRIPTION]


def upgrade(args: argparse.Namespace) -> ExitCode:
    """A version 1 file rewritten as version 2: for its target (a document over releases: each release), the
    campaign run again; each cause whose version 1 entries (property, function, path) the old file listed there
    is recorded by its identity, required where all of them were; a version 1 entry no cause makes is dropped
    and said (there is no root cause left to name)."""
    from fuzz.findings import baseline, baseline_v1

    try:
        target, declared, listed = baseline_v1.read_v1(baseline.load_data(args.file, "FILE"), f"FILE {args.file}")
    except baseline.BaselineError as e:
        raise BadInput(str(e)) from None
    if args.sglang_version:
        raise BadInput("--sglang-version is for write --target")
    releases = sorted(
        declared or {*baseline.target_release(target), *(r for _, rs, _ in listed for r in rs or ())},
        key=baseline.release_key,
    )
    at = releases if target == baseline.RELEASES_TARGET else [None]
    found: dict[str, dict[baseline.Entry, bool]] = {}
    name = target
    for release in at:
        here = [(p, req) for p, rs, req in listed if rs is None or (release is not None and release in rs)]
        places = {p for p, _ in here}
        required = {p for p, req in here if req}
        name, causes = causes_of(target if release is None else f"sglang=={release}", args)
        kept: dict[baseline.Entry, bool] = {}
        used: set[baseline_v1.PlaceV1] = set()
        for c in causes:
            mine = baseline_v1.places_of(c)
            if mine and mine <= places:
                used |= mine
                kept.update(dict.fromkeys(baseline.entries_of(c), mine <= required))
        found[release or ""] = kept
        if not args.quiet:
            print(f"[{release or name}] {len(kept)} entr(ies) kept, {len(places - used)} version 1 entr(ies) dropped")
            for p in sorted(places - used):
                print(f"  dropped: {p.property} in {p.function} ({p.path}): no root cause of the campaign makes it")
    if target == baseline.RELEASES_TARGET:
        doc = baseline.releases_document(target, found, describe(args, f"--releases {','.join(releases)}"))
    else:
        doc = {**baseline.document(name, []), "entries": [e.to_json() for e in sorted(found[""])]}
    write_atomically(args.file, baseline.dumps(doc))
    print(f"{args.file}: upgraded to version {baseline.SCHEMA_VERSION}, {len(doc['entries'])} entr(ies)")
    return ExitCode.CLEAN

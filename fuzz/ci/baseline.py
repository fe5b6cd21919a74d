"""``python -m fuzz baseline write FILE --target SPEC``: record a target's root causes as known findings.

The campaign ``run`` runs (its proof stage first, the profile's search after,
SGLang's write path where the target has it), its findings grouped by root
cause (``fuzz.causes``), and each cause's entries (property, qualified
function, repository path: ``fuzz.findings.baseline``) written to FILE. Then
``run``/``lifecycle``/``prove --baseline FILE`` fail only on causes not in
it. Exit 0: written (also when the target is clean: an empty baseline);
2: bad input.
"""

from __future__ import annotations

import argparse
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
        "Record a target's root causes as known findings, for --baseline. Exit 0: written; 2: bad input.",
        cmd_baseline,
    )
    p.add_argument("action", choices=("write",), help="write: run the campaign and record its causes")
    p.add_argument("file", metavar="FILE", help="the baseline to write (JSON)")
    p.add_argument("--target", required=True, metavar="SPEC", help=TARGETS_HELP)
    p.add_argument("--profile", choices=PROFILE_NAMES, default="ci", help="the campaign's (default ci)")
    p.add_argument("--max-examples", type=positive_int, metavar="N", help="examples per round (overrides the profile)")
    p.add_argument("--write-path", choices=("auto", "sglang", "model"), default="auto", help="as run's (default auto)")
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def cmd_baseline(args: argparse.Namespace) -> ExitCode:
    from fuzz.causes import root_causes
    from fuzz.findings import baseline
    from fuzz.prove.quick import proof_stage
    from fuzz.run.engine import campaign
    from fuzz.run.sglang import WritePathMode, has_sglang_path
    from fuzz.targets.resolve import resolve_targets

    check_output_file(args.file, "FILE")
    (target,) = resolve_targets([args.target], args.sglang_version)
    args.seed = None
    _, hyp, seed = campaign_settings(args)
    has_sglang_path(target, WritePathMode(args.write_path))  # asked for SGLang's own and it cannot: exit 2
    result = campaign(target, hyp, seed=seed, proof=proof_stage, write_path=WritePathMode(args.write_path))
    if result.error:
        raise BadInput(f"{target.spec}: the campaign failed: {result.error}")
    causes = root_causes(target, result.findings)
    write_atomically(args.file, baseline.text(target.spec, causes))
    entries = len(baseline.document(target.spec, causes)["entries"])
    print(f"{args.file}: {len(causes)} root cause(s) of {target.spec}, {entries} entr(ies)")
    for c in causes:
        print(f"  {c.label}: {c.title}")
    return ExitCode.CLEAN

"""``kvrow-fuzz lifecycle``: stateful fuzzing of the request lifecycle, one campaign per target.

Exit status as ``run``: 0 no invariant broken, 1 at least one finding (a case
file per finding, replayable with ``kvrow-fuzz repro``), 2 bad input.

Light at import (its parser serves ``--help`` without torch or Hypothesis):
the state machine is its engine's, reached when it runs (``Engine.lifecycle_hunt``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fuzz.common.defaults import LIFECYCLE_RUNS, LIFECYCLE_STEPS
from fuzz.common.errors import ExitCode
from fuzz.common.options import add_command, campaign_header, campaign_options, positive_int

if TYPE_CHECKING:
    from hypothesis import settings as Settings

    from fuzz.campaign.driver import CampaignResult
    from fuzz.targets.base import Target

DEFAULT_STEPS = LIFECYCLE_STEPS  # ``fuzz.common.defaults``: the parser's and the machine's one home


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "lifecycle",
        "stateful fuzzing of the request lifecycle",
        (
            "Drive a running batch (admit, chunked prefill, decode with accept runs and overlap lag, adaptive steps, "
            "stop, retract) with Hypothesis' state machines and check the pool after every step. "
            "Exit 0: no invariant broken; 1: at least one finding; 2: bad input."
        ),
        cmd_lifecycle,
        parents=[campaign_options()],
    )
    p.add_argument(
        "--steps",
        type=positive_int,
        default=DEFAULT_STEPS,
        metavar="N",
        help=f"steps per state-machine run at most (default {DEFAULT_STEPS})",
    )


def cmd_lifecycle(args: argparse.Namespace) -> ExitCode:
    from hypothesis import settings as Settings

    from fuzz.campaign.execute import drive_campaigns, setup_campaign
    from fuzz.engines import engine_of
    from fuzz.findings.report import Command

    s = setup_campaign(args, Command.LIFECYCLE)
    for target in s.targets:
        engine_of(target).has_own_path(target, args.write_path)  # asked for SGLang's own and it cannot: exit 2
    hyp = s.hyp if args.max_examples else Settings(s.hyp, max_examples=LIFECYCLE_RUNS[s.profile])
    s.hyp = hyp  # the runs per round are the campaign's examples (shared out among --jobs workers)
    return drive_campaigns(
        args,
        Command.LIFECYCLE,
        s,
        campaign_header(
            f"profile {s.profile}, {hyp.max_examples} state-machine runs per round of up to {args.steps} steps",
            hyp,
            s.seed,
        ),
        fuzz_lifecycle,
        {"steps": args.steps, "write_path": args.write_path},
    )


def fuzz_lifecycle(
    target: Target,
    hyp: Settings,
    seed: int | None,
    cover_part: tuple[int, int],
    pins: dict[str, Any],
    options: dict[str, Any],
    hooks: Any,
) -> CampaignResult:
    """The lifecycle campaign on one target (module level: a ``--jobs`` worker finds it by name); it has no
    covering set to share out."""
    from fuzz.campaign.driver import run_campaign
    from fuzz.common.threads import one_torch_thread
    from fuzz.engines import engine_of
    from fuzz.engines.base import LifecycleOptions

    hunt = engine_of(target).lifecycle_hunt(
        target, LifecycleOptions(options["steps"], pins, options.get("write_path", "auto"))
    )
    with one_torch_thread():
        return run_campaign(target, hunt, hyp, seed=seed, **hooks)

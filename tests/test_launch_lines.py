"""Launch lines that boot: every printed ``python -m sglang.launch_server`` line, checked by executing the release's
own server-argument handlers (``real.runtime.launch_check.HANDLERS``: the MLA backends' page constraints, the
page-size default, ``handle_speculative_decoding`` with every algorithm's branch, ``validate_hisparse``, the
unified memory pool's validator), on a stand-in model of the family the line names and one CUDA GPU.

A line passes when SGLang accepts it and resolves it to the case's configuration (page size, context length,
DCP, the speculative algorithm and its (S, K, D), adaptive, overlap, the pool flags).  The negative controls are
the four kinds of line the tool printed before (measured in issue 35): the same check rejects each.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hermetic import require_wheel

from allocator_model import algorithms as algo
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.pools import KVPool
from allocator_model.revisions import RELEASE_REVISIONS, get_revision
from fuzz.engines.sglang.launch import FAMILIES, Launch, check_launch, checked, launch, launch_line
from fuzz.engines.sglang.real.runtime.launch_check import HANDLERS, LaunchValidators, Model

RELEASES = ("0.5.18", "0.5.23")
# Every release the model knows: the pinned ones in the default tier, the rest in the network tier (their wheels).
EVERY_RELEASE = [v if v in RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASE_REVISIONS]


def wheel(release: str) -> str:
    return str(require_wheel(release))


def cfg(**args: object) -> ServingConfig:
    return ServingConfig.resolve(context_len=4096, **args)  # type: ignore[arg-type]


def without(line: Launch, *flags: str) -> Launch:
    """``line`` less ``flags`` (each with its value where it takes one)."""
    out: list[str] = []
    skip = False
    for f in line.flags:
        if skip:
            skip = False
            continue
        if f in flags:
            skip = f not in ("--disable-radix-cache",)
            continue
        out.append(f)
    return replace(line, flags=tuple(out))


# -- negative controls: the lines printed before, rejected by the same check ------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_hisparse_without_the_radix_switch_or_the_model_family_is_refused(release):
    c = cfg(page_size=64, kv_pool=KVPool.HISPARSE)
    line = launch(c)
    assert "--disable-radix-cache" in line.flags and checked(c, wheel(release)) is None
    refusal = check_launch(without(line, "--disable-radix-cache"), c, wheel(release))
    assert refusal == "SGLang refuses it: Hierarchical sparse attention currently requires --disable-radix-cache."
    dense = check_launch(replace(line, family=FAMILIES[KVPool.STANDARD]), c, wheel(release))
    assert dense is not None and "--enable-hisparse is only supported for DSA" in dense


@pytest.mark.parametrize("release", RELEASES)
def test_dflash_without_a_draft_checkpoint_is_refused(release):
    c = cfg(
        page_size=1,
        speculative_algorithm="DFLASH",
        speculative_num_steps=1,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=16,
    )
    line = launch(c)
    assert "--speculative-draft-model-path" in line.flags and checked(c, wheel(release)) is None
    refusal = check_launch(without(line, "--speculative-draft-model-path"), c, wheel(release))
    assert refusal == "SGLang refuses it: DFLASH speculative decoding requires setting --speculative-draft-model-path."


@pytest.mark.parametrize("release", RELEASES)
def test_an_adaptive_config_without_batch_size_keys_is_refused(release):
    c = cfg(
        speculative_algorithm="EAGLE",
        speculative_num_steps=15,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=16,
        speculative_adaptive=True,
        speculative_adaptive_candidate_steps=(0, 15),
    )
    line = launch(c)
    assert line.files == {"ADAPTIVE.json": '{"1": {"candidate_steps": [0, 15]}}'}
    assert checked(c, wheel(release)) is None
    flat = replace(line, files={"ADAPTIVE.json": '{"candidate_steps": [0, 15]}'})  # the format printed before
    refusal = check_launch(flat, c, wheel(release))
    assert refusal is not None and "must contain at least one integer-string BS key" in refusal


@pytest.mark.parametrize("release", RELEASES)
def test_ngram_with_the_eagle_topk_flag_launches_another_topk(release):
    c = cfg(
        speculative_algorithm="NGRAM", speculative_num_steps=4, speculative_eagle_topk=1, speculative_num_draft_tokens=4
    )
    line = launch(c)
    assert "--speculative-ngram-max-bfs-breadth" in line.flags and checked(c, wheel(release)) is None
    as_before = replace(
        line,
        flags=tuple(
            "--speculative-eagle-topk" if f == "--speculative-ngram-max-bfs-breadth" else f for f in line.flags
        ),
    )
    # _handle_ngram takes the topk from --speculative-ngram-max-bfs-breadth (default 10), not from the flag given
    assert check_launch(as_before, c, wheel(release)) == "the line launches speculative_eagle_topk=10, not the case's 1"


@pytest.mark.parametrize("release", RELEASES)
def test_a_flag_the_release_does_not_declare_is_refused_as_argparse_would(release):
    v = LaunchValidators.load(wheel(release))
    out = v.check(["--model-path", "MODEL", "--no-such-flag"], Model("LlamaForCausalLM"))
    assert out.refusal == "unrecognized arguments: --no-such-flag"
    out = v.check(["--model-path", "MODEL", "--page-size", "sixteen"], Model("LlamaForCausalLM"))
    assert out.refusal == "argument --page-size: invalid int value: 'sixteen'"


@pytest.mark.parametrize("release", RELEASES)
def test_the_handlers_named_are_the_releases_own_functions(release):
    """Each ``FILE FUNCTION`` of ``HANDLERS`` is a function that release's wheel defines (the unified memory
    validator: the hook's from 0.5.19, ``ServerArgs``' method to 0.5.18)."""
    import re

    from fuzz.engines.sglang.real.runtime.tree import open_tree

    tree = open_tree(wheel(release))
    named = [m.groups() for h in HANDLERS for m in re.finditer(r"([\w/]+\.py) ([\w.]+)", h)]
    assert len(named) == 6
    defined = [(f, fn) for f, fn in named if f"def {fn.rpartition('.')[2]}(" in (tree.read(f"sglang/srt/{f}") or "")]
    unified = {n for n in named if "unified_memory_pool" in n[1]}
    assert set(named) - unified <= set(defined), set(named) - set(defined)  # every release runs these
    assert len(unified & set(defined)) == 1, unified  # exactly one spelling of the unified validator


# -- every configuration the model launches boots as printed ------------------------------------------------------

SHAPES = ((3, 1, 4), (5, 4, 8), (1, 1, 17), (None, None, None), (2, 10, 12), (15, 1, 16))


def launchable(release: str) -> list[ServingConfig]:
    """A grid over every kind of pool, algorithm, page, DCP, adaptive, overlap and (S, K, D) shape: the configs the
    model says the release launches (``ServingConfig``'s rules and ``Revision.refuses``)."""
    revision = get_revision(RELEASE_REVISIONS[release])
    out = []
    for kind, a, page, dcp, adaptive, overlap, (s, k, d) in itertools.product(
        KVPool, (None, *algo.ALL), (1, 16, 64), (1, 2), (False, True), (True, False), SHAPES
    ):
        try:
            c = cfg(
                page_size=page,
                attn_dcp_size=dcp,
                speculative_algorithm=a,
                speculative_num_steps=s if a else None,
                speculative_eagle_topk=k if a else None,
                speculative_num_draft_tokens=d if a else None,
                speculative_adaptive=adaptive,
                kv_pool=kind,
                enable_overlap=overlap,
            )
        except (ConfigError, ValueError):
            continue
        if revision.refuses(c) is None:
            out.append(c)
    return list(dict.fromkeys(out))


@pytest.mark.parametrize("release", EVERY_RELEASE)
def test_every_configuration_the_model_launches_boots_as_printed(release):
    configs = launchable(release)
    assert len(configs) > 300  # every kind and algorithm the release has, several shapes each
    assert {c.kv_pool for c in configs} == set(get_revision(RELEASE_REVISIONS[release]).pools)
    failed = [(launch_line(c), why) for c in configs if (why := checked(c, wheel(release))) is not None]
    assert not failed, f"{len(failed)} of {len(configs)} lines do not boot as printed, e.g. {failed[:3]}"


# -- every line a campaign prints -------------------------------------------------------------------------------

CAMPAIGNS = (("sglang==0.5.18", "0.5.18"), ("sglang==0.5.23", "0.5.23"), ("reference@sglang-0.5.18", "0.5.18"))


@pytest.mark.slow
@pytest.mark.parametrize(("target", "release"), CAMPAIGNS)
def test_every_launch_line_a_ci_campaign_prints_boots(target, release, tmp_path):
    """``run --profile ci --verbose`` prints every group's block; each block's launch line is the finding's
    ``launch_line`` and boots on the release's own handlers (a reference target: the release it models)."""
    import contextlib
    import io
    import json

    from fuzz.cli import main

    path = wheel(release)
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
        code = main(
            [
                "run",
                "--target",
                target,
                "--profile",
                "ci",
                "--verbose",
                "--cases",
                str(tmp_path / "cases"),
                "--json",
                str(tmp_path / "r.json"),
            ]
        )
    assert code == 1  # every one of these releases has bugs the ci profile finds
    printed = printed_launch_commands(text.getvalue())
    findings = json.loads((tmp_path / "r.json").read_text())["targets"][0]["findings"]
    assert findings and printed
    from fuzz.engines.sglang.launch import check_launch
    from fuzz.engines.sglang.page_tables import backend_of

    cases = [f for f in findings] + [
        f["representative"]["finding"] for f in findings if f.get("representative", {}).get("found")
    ]
    lines = {}
    for f in cases:  # a finding on a backend's table: its line names that backend
        c = ServingConfig.from_dict(f["config"])
        line = launch(c, backend_of(f["case"].get("table")))
        lines[" ".join(line.command().split())] = (c, line)
    assert printed <= set(lines), printed - set(lines)  # each printed line is a finding's (minimal or representative)
    failed = [(text, why) for text, (c, line) in lines.items() if (why := check_launch(line, c, path)) is not None]
    assert not failed, failed


def printed_launch_commands(text: str) -> set[str]:
    """Every ``launch: python -m sglang.launch_server ...`` command the text prints, its shell continuations
    joined (the ``# NOTE`` lines after it left out)."""
    out, current = set(), None
    for line in text.splitlines():
        if current is None and "launch: python -m sglang.launch_server" in line:
            current = line.split("launch: ", 1)[1]
        elif current is not None:
            current += " " + line.strip()
        if current is not None and not current.endswith("\\"):
            out.add(" ".join(current.replace(" \\ ", " ").split()))
            current = None
        elif current is not None:
            current = current[:-1]
    return out

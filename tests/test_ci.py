"""What SGLang's CI is told to use: ``paths`` lists every file a target reads, and docs/ci.md's workflow uses it."""

from __future__ import annotations

import re
from pathlib import Path

from documentation import page

from fuzz.cli import main
from fuzz.engines.sglang.real.paths import read_paths
from fuzz.engines.sglang.real.wheels import repository_path
from fuzz.targets.resolve import resolve_target


def readme_paths() -> list[str]:
    """The ``paths:`` of the workflow docs/ci.md shows an SGLang repository."""
    block = page("ci.md").split("    # .github/workflows/kv-rows.yml", 1)[1].split("    permissions:", 1)[0]
    return re.findall(r"^          - (\S+)$", block, re.M)


def test_the_readme_workflow_watches_every_file_0_5_23_reads(pinned_wheels):
    paths = read_paths(resolve_target("sglang==0.5.23"))
    assert readme_paths() == paths
    assert paths[:2] == [
        "python/sglang/srt/mem_cache/allocation_sizing.py",
        "python/sglang/srt/mem_cache/kv_cache_configurator.py",
    ]
    assert (
        "python/sglang/srt/speculative/eagle_utils.py" in paths
        and "python/sglang/kernels/ops/memory/allocator.py" in paths
    )


def test_a_lone_sizing_file_reads_only_itself_and_a_model_reads_nothing(tmp_path, capsys):
    shape = Path(__file__).parent / "sglang_shapes" / "uno.py"
    assert read_paths(resolve_target(f"{shape}@0.5.23")) == [str(shape)]
    assert main(["paths", "--target", "reference"]) == 2
    assert "reads no SGLang file" in capsys.readouterr().err


def test_repository_paths_are_the_same_from_a_wheel_a_checkout_and_a_bare_tree():
    for where in (
        "/root/.cache/w/sglang-0.5.23-cp311.whl/sglang/srt/mem_cache/allocation_sizing.py",
        "/home/me/sglang/python/sglang/srt/mem_cache/allocation_sizing.py",
        "python/sglang/srt/mem_cache/allocation_sizing.py",
    ):
        assert repository_path(where) == "python/sglang/srt/mem_cache/allocation_sizing.py"


def test_the_readme_workflow_uploads_sarif_only_where_the_token_can_write():
    text = page("ci.md")
    assert "github.event.pull_request.head.repo.full_name == github.repository" in text
    assert "baseline: .github/kvrow-baseline.json" in text

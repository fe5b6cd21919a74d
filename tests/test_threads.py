"""A command that runs a target's code runs torch on one thread (``fuzz.common.threads``): its processes are the
parallelism, and a second torch thread only spin-waits on a shared machine; a command that runs none (and --help)
starts without torch, and a block's setting is its caller's again after it."""

from __future__ import annotations

import subprocess
import sys

import torch

from fuzz.common.threads import one_torch_thread

SCRIPT = """
import torch
from fuzz.cli import main
torch.set_num_threads(3)
main(["targets"])
print("threads", torch.get_num_threads())
main(["prove", "--target", "reference", "--space", "small"])
print("threads", torch.get_num_threads())
"""


def test_a_command_that_runs_a_target_sets_one_thread_and_one_that_runs_none_leaves_it():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120)
    threads = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("threads ")]
    assert threads == ["3", "1"], out.stdout + out.stderr


def test_help_starts_without_torch():
    script = "import sys\nfrom fuzz.cli import main\nmain(['run', '--help'])\n"
    script += "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-1] == "False", out.stdout + out.stderr


def test_a_block_restores_its_callers_setting():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_torch_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)

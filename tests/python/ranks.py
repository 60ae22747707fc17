"""Run a torch.distributed job as subprocesses with a deadline, so a hang fails the test."""

import os
import subprocess
import sys

import pytest


def rank_env():
    """The environment of a rank: this process's import path (mmpt, the test helpers),
    one OpenMP thread per rank (the ranks share the machine's cores)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["OMP_NUM_THREADS"] = "1"
    return env


def run_ranks(world, args_for_rank, timeout):
    """Start `world` processes (argv from args_for_rank(rank)); return their outputs. Fails the
    test when a rank exits non-zero, and raises TimeoutError when they do not all finish within
    `timeout` seconds (a hang)."""
    procs = [subprocess.Popen(args_for_rank(rank), env=rank_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rank in range(world)]
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=timeout)[0])
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.communicate()
        raise TimeoutError(f"{world} ranks did not finish within {timeout} s (hang)")
    for rank, proc in enumerate(procs):
        if proc.returncode != 0:
            pytest.fail(f"rank {rank} of {world} exited {proc.returncode}:\n{outputs[rank]}")
    return outputs

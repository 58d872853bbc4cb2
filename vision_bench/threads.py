"""How the command line's worker threads wait: asleep, not spinning, unless the user says otherwise.

torch's CPU kernels run on OpenMP threads. By default an OpenMP thread that finishes its share of a
kernel spins for a while before it sleeps, waiting for the next kernel. On a quiet machine that
saves a wake-up; on a shared one the spinning thread holds a core that its partner (or another
user's job) needs, and every kernel waits for the slowest thread. Beside two busy processes on two
cores the quickstart spent about 5x the CPU time of a quiet run this way (docs/benchmarks.md,
"Under load"). `OMP_WAIT_POLICY=PASSIVE` makes idle threads sleep at once.

The variable is read once, when the OpenMP runtime loads with torch, so `vision_bench.cli` sets it
before any command imports torch. A value the user set (`OMP_WAIT_POLICY=ACTIVE` for a dedicated
machine) is kept. Library users who import torch themselves set it in their own environment.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

WAIT_POLICY = "OMP_WAIT_POLICY"
DEFAULT_WAIT_POLICY = "PASSIVE"


def prefer_passive_waits(environ: MutableMapping[str, str] | None = None) -> str:
    """Set `OMP_WAIT_POLICY=PASSIVE` unless the environment already names a policy; the policy in force."""
    environ = os.environ if environ is None else environ
    return environ.setdefault(WAIT_POLICY, DEFAULT_WAIT_POLICY)


__all__ = ["DEFAULT_WAIT_POLICY", "WAIT_POLICY", "prefer_passive_waits"]

"""SVIB's state-space models: one training step of the project's SSM-VAE and SSM-Slot against SVIB's own module.

    python benchmarks/bench_svib_ssm.py ../svib [--size 128] [--batch 4] [--steps 5] [--threads 1]

`../svib` is a checkout of SVIB's released code (systematic-visual-imagination/svib), whose modules are run from
it (never copied), as tests/fixtures_svib/make_ssm_fixture.py runs them. Both sides are built at SVIB's settings
(configs/dynamic_vae.py, configs/dynamic_slot.py) and the image size given, and one training step (the objective on
a fixed two-frame video, backward, Adam as ssms/*/train.py) is timed alternately on each side, step by step, so a
drifting machine biases neither. The median step and the project's ratio to SVIB's are printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures_svib.make_fixture import _import_svib  # noqa: E402

from vision_bench.models.svib_ssm import SsmSlot, SsmSlotSettings, SsmVae, SsmVaeSettings  # noqa: E402


def training_step(model: nn.Module, loss: Callable[[], torch.Tensor]) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss().backward()
        optimizer.step()

    return step


def svib_modules(size: int) -> dict[str, nn.Module]:
    """SVIB's DynamicVAE and DynamicSlot at `size` pixels, as ssms/*/train.py builds them."""
    from configs.dynamic_slot import dynamic_slot_configs
    from configs.dynamic_vae import dynamic_vae_configs
    from ssms.dynamic_slot.modules import DynamicSlot, SpatialBroadcastDecoder
    from ssms.dynamic_vae.modules import DynamicVAE
    from yacs.config import CfgNode

    script = {"image_size": size, "image_channels": 3}
    slot = DynamicSlot(CfgNode({**dynamic_slot_configs, **script}))
    if size != 128:  # SVIB's decoder always broadcasts 8 x 8 to 128 pixels
        slot.decoder = SpatialBroadcastDecoder(dynamic_slot_configs.slot_size, 4, size // 16)
    return {"ssm-vae": DynamicVAE(CfgNode({**dynamic_vae_configs, **script})), "ssm-slot": slot}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("svib", type=Path, help="a checkout of SVIB's released code")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    _import_svib(args.svib.resolve())
    torch.manual_seed(0)
    video = torch.rand(args.batch, 2, 3, args.size, args.size)
    ours: dict[str, nn.Module] = {
        "ssm-vae": SsmVae(SsmVaeSettings(image_size=args.size)),
        "ssm-slot": SsmSlot(SsmSlotSettings(image_size=args.size, broadcast_size=args.size // 16)),
    }
    theirs = svib_modules(args.size)
    print(f"{args.size}x{args.size} two-frame videos, batch {args.batch}, CPU, {args.threads} thread(s), "
          f"median of {args.steps} steps")
    print("model\tparameters\tproject step s\tSVIB step s\tratio")
    for name, model in ours.items():
        svib = theirs[name]
        step = training_step(model, lambda model=model: model.loss(video).loss)  # type: ignore[misc]
        svib_step = training_step(svib, lambda svib=svib: svib(video)[0])  # type: ignore[misc]
        step(), svib_step()
        times, svib_times = [], []
        for _ in range(args.steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            svib_step()
            svib_times.append(time.perf_counter() - start)
        parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
        median, base = statistics.median(times), statistics.median(svib_times)
        print(f"{name}\t{parameters:,}\t{median:.3f}\t{base:.3f}\t{median / base:.2f}x")


if __name__ == "__main__":
    main()

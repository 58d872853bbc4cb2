"""Model training-step cost: each image-to-image model against its bare timm backbone, same run.

    python benchmarks/bench_models.py [--size 128] [--batch 16] [--steps 5] [--device cpu]
        [--models unet:resnet18 bottleneck:resnet18 vit:vit_small_patch16_224]

For each model, one training step (forward, loss, backward, AdamW) is timed on a fixed random
batch, and so is the same step of the plain timm classifier it is built on (cross-entropy on
random labels, same images): the ratio model / backbone is what the decoder, head and task
conditioning cost on top of the encoder. Both are timed alternately, step by step, so a drifting
machine biases neither side; the median step is reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import timm  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from vision_bench.models import create_model  # noqa: E402


def training_step(model: torch.nn.Module, loss_of: Callable[[], torch.Tensor]) -> Callable[[], None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_of().backward()
        optimizer.step()

    return step


def timed(step: Callable[[], None], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def compare(name: str, args: argparse.Namespace, device: torch.device) -> tuple[float, float]:
    """(median model step, median backbone step) in seconds."""
    torch.manual_seed(0)
    backbone_name = name.split(":", 1)[1]
    extra = {"img_size": args.size, "patch_size": args.patch_size} if name.startswith("vit:") else {}
    options = {"patch_size": args.patch_size} if name.startswith("vit:") else {}
    model = create_model(name, image_size=args.size, task_conditioning=args.task_conditioning, **options).to(device)
    backbone = timm.create_model(backbone_name, pretrained=False, num_classes=10, **extra).to(device)
    images = torch.rand(args.batch, 3, args.size, args.size, device=device)
    batch = {
        "input": images,
        "target": torch.rand_like(images),
        "task_code": torch.randint(0, 29, (args.batch, 4), device=device),
    }
    labels = torch.randint(0, 10, (args.batch,), device=device)
    model_step = training_step(model, lambda: model.training_loss(batch))
    backbone_step = training_step(backbone, lambda: F.cross_entropy(backbone(images), labels))
    for _ in range(2):
        model_step(), backbone_step()
    model_times, backbone_times = [], []
    for _ in range(args.steps):
        model_times.append(timed(model_step, device))
        backbone_times.append(timed(backbone_step, device))
    return statistics.median(model_times), statistics.median(backbone_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", nargs="+", default=["unet:resnet18", "bottleneck:resnet18", "vit:vit_small_patch16_224"]
    )
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--patch-size", type=int, default=16)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--task-conditioning", action="store_true")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"{args.size}px, batch {args.batch}, device {device}, median of {args.steps} steps")
    print("model\tmodel step ms\tbackbone step ms\tratio\tmodel images/s")
    for name in args.models:
        model_time, backbone_time = compare(name, args, device)
        print(
            f"{name}\t{model_time * 1e3:.1f}\t{backbone_time * 1e3:.1f}\t{model_time / backbone_time:.2f}x"
            f"\t{args.batch / model_time:.1f}"
        )


if __name__ == "__main__":
    main()

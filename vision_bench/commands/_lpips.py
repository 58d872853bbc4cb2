"""The LPIPS switches shared by the commands that score images (quickstart, bench, evaluate,
compare-metrics, score): which network, and whether missing weights may be fetched."""

from __future__ import annotations

import argparse
import logging

from vision_bench.weights.lpips import NETS

logger = logging.getLogger(__name__)


def add_lpips_arguments(parser: argparse.ArgumentParser, *, net: bool = True) -> None:
    if net:
        parser.add_argument("--lpips-net", default="alex", choices=NETS, help="LPIPS backbone (default alex)")
    parser.add_argument(
        "--offline", action="store_true",
        help="never fetch LPIPS weights (also $VISION_BENCH_OFFLINE=1); without them LPIPS is reported unavailable",
    )


def prepare_lpips(net: str, offline: bool) -> None:
    """Fetch LPIPS-`net`'s backbone once if it is missing (visible on stderr), unless offline.

    A failed fetch is one warning line: the command goes on and reports LPIPS unavailable.
    """
    from vision_bench.weights.lpips_fetch import FetchError, get_lpips_weights, offline_requested

    if offline_requested(offline):
        return
    try:
        get_lpips_weights([net], report=logger.info)
    except (FetchError, OSError) as error:
        logger.warning("warning: LPIPS will be unavailable: %s", error)


def prepare_lpips_loss(loss: object, offline: bool) -> None:
    """For a training loss with LPIPS terms (`mse+0.1*lpips`): fetch their weights unless offline,
    then refuse to start, before anything is written, when one is still missing."""
    if not isinstance(loss, str) or "lpips" not in loss:
        return
    from vision_bench.errors import ConfigError
    from vision_bench.models.heads import parse_rgb_loss
    from vision_bench.weights.lpips import WeightsProblem, find_backbone

    for _, term in parse_rgb_loss(loss):
        if term.startswith("lpips:"):
            net = term.split(":")[1]
            prepare_lpips(net, offline)
            try:
                find_backbone(net)
            except WeightsProblem as error:
                raise ConfigError(f"loss {loss!r}: {error}") from None

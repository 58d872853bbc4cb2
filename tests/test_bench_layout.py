"""Render layouts of bench configs: fixed cell size when grid sizes differ between splits."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from render import RenderSpec, render  # noqa: E402
from vision_bench.bench.config import BenchConfig, check_layout, resolve_experiments  # noqa: E402
from vision_bench.bench.runner import load_bench_config  # noqa: E402
from vision_bench.errors import ConfigError  # noqa: E402
from vision_bench.tasks.studies import STUDIES, get_study  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
VARIABLE_GRID_CONFIGS = [CONFIGS / scale / f"envgen_{g}.yaml" for scale in ("paper", "smoke") for g in ("g2", "g5")]
G2_REFUSAL = (
    "experiment envgen/G2/1: grids are 10-15 x 10-15 in train but 16-20 x 16-20 in val_ood, so layout '{mode}' "
    "draws ID and OOD cells at different pixel sizes (a confound); set data.spec.layout: cell:3 (fixed 3-pixel "
    "cells), or allow_cell_size_confound: true in the bench config to keep it"
)


def bench(spec: dict, experiments: list[str], **options: object) -> tuple[BenchConfig, RenderSpec]:
    config = BenchConfig.from_dict({"experiments": experiments, "models": ["unet:test_resnet"],
                                    "data": {"spec": spec}, **options})
    return config, RenderSpec.from_dict(spec)


@pytest.mark.parametrize("mode", ["stretch", "fit"])
def test_layouts_that_scale_cells_are_refused_when_grid_sizes_differ(mode: str) -> None:
    config, spec = bench({"size": [64, 64], "layout": mode}, ["envgen/G2/1"])
    with pytest.raises(ConfigError) as error:
        check_layout(config, ["envgen/G2/1"], spec)
    assert str(error.value) == G2_REFUSAL.format(mode=mode)


def test_the_confound_can_be_accepted_explicitly() -> None:
    config, spec = bench({"size": [64, 64]}, ["envgen/G2/1"], allow_cell_size_confound=True)
    check_layout(config, ["envgen/G2/1"], spec)


def test_grid_sizes_are_read_from_any_task_config(tmp_path: Path) -> None:
    task = get_study("envgen/G1/1", n_train=4, n_val=2, n_test=2).to_dict()  # 15x15 in every split
    config, spec = bench({"size": [64, 64]}, ["envgen/G1/1"])
    check_layout(config, ["envgen/G1/1"], spec)  # one grid size: stretch is fine
    task["splits"]["test_id"] = {"grid_width": [12, 12]}
    path = tmp_path / "narrow.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"experiment {path}: grids are 15 x 15 in train but 15 x 12 in test_id"):
        check_layout(config, [str(path)], spec)


def test_cells_too_large_for_the_largest_grid_are_refused() -> None:
    config, spec = bench({"size": [64, 64], "layout": "cell:4"}, ["envgen/G5/1"])
    with pytest.raises(ConfigError, match="^data.spec: experiment envgen/G5/1: a 20x20 grid does not fit 64x64 "
                       "pixels with layout 'cell' and 4-pixel cells; use a larger size or smaller cells$"):
        check_layout(config, ["envgen/G5/1"], spec)


def test_cli_bench_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    path = tmp_path / "g2.yaml"
    path.write_text(yaml.safe_dump({"experiments": ["envgen/G2/1"], "models": ["unet:test_resnet"],
                                    "data": {"spec": {"size": [64, 64]}}}), encoding="utf-8")
    assert main(["bench", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith(G2_REFUSAL.format(mode="stretch")) and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.yaml")), ids=lambda p: str(p.relative_to(CONFIGS)))
def test_shipped_bench_configs_pass_the_layout_check(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not (isinstance(data, dict) and {"experiments", "models"} <= data.keys()):
        pytest.skip("not a bench config")
    config = load_bench_config(path)
    assert not config.allow_cell_size_confound
    check_layout(config, resolve_experiments(config.experiments, STUDIES.names()),
                 RenderSpec.from_dict(config.data.spec))


def cell_runs(image: np.ndarray, background: np.ndarray) -> list[int]:
    """Lengths of the same-color runs of non-background pixels along the middle row and column of the drawn
    grid (centred or in a corner)."""
    rows, cols = np.nonzero((image != background).any(axis=2))
    lines = [image[(rows.min() + rows.max()) // 2], image[:, (cols.min() + cols.max()) // 2]]
    runs = []
    for line in lines:
        inside = line[(line != background).any(axis=1)]
        changes = np.flatnonzero((inside[1:] != inside[:-1]).any(axis=1)) + 1
        runs += np.diff(np.concatenate([[0], changes, [len(inside)]])).tolist()
    return runs


@pytest.mark.parametrize("path", VARIABLE_GRID_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_id_and_ood_images_have_equal_cells(path: Path) -> None:
    config = load_bench_config(path)
    spec = RenderSpec.from_dict(config.data.spec)
    assert spec.layout.mode == "cell"
    task = get_study(resolve_experiments(config.experiments, STUDIES.names())[0], n_train=4, n_val=2, n_test=2)
    smallest_id = task.for_split("test_id").grid_height[0], task.for_split("test_id").grid_width[0]
    largest_ood = task.for_split("test_ood").grid_height[1], task.for_split("test_ood").grid_width[1]
    assert smallest_id != largest_ood
    background = spec.colors()[0]
    for height, width in (smallest_id, largest_ood):
        checkerboard = (np.indices((height, width)).sum(axis=0) % 2 + 1).astype(np.uint8)  # colors 1 and 2
        runs = cell_runs(render(checkerboard, spec), background)
        assert runs == [spec.layout.cell_size] * (width + height)

"""The benchmark presets in configs/ validate end to end, short of training.

Each bench config must load as a `BenchConfig`, its experiments must expand to buildable studies,
and the first cell of every model must give a valid `TrainConfig` (assembled as the bench runner
assembles it) whose model the trainer can build. Paper presets must keep the paper's scale.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.bench.config import BenchConfig, alpha_of, resolve_experiments, setting_of  # noqa: E402
from vision_bench.bench.runner import load_bench_config  # noqa: E402
from vision_bench.tasks.studies import STUDIES, get_study  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
PAPER, SMOKE = CONFIGS / "paper", CONFIGS / "smoke"
STUDY_FILES = [f"compgen_c{i}.yaml" for i in range(1, 4)] + [f"envgen_g{i}.yaml" for i in range(1, 6)]
PRESET_FILES = [*STUDY_FILES, "alpha_sweep.yaml"]


def _is_bench_config(path: Path) -> bool:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return isinstance(data, dict) and {"experiments", "models"} <= data.keys()


BENCH_CONFIGS = sorted(p for p in CONFIGS.rglob("*.yaml") if _is_bench_config(p))
_BUILT_MODELS: set[str] = set()


def _experiments(config: BenchConfig) -> list[str]:
    return resolve_experiments(config.experiments, STUDIES.names())


def _first_cell_configs(config: BenchConfig) -> list:
    """The TrainConfig of each model's first cell, built from the same keys as the bench runner's."""
    from render.spec import RenderSpec
    from vision_bench.train import TrainConfig

    experiment = _experiments(config)[0]
    spec = RenderSpec.from_dict(config.data.spec).to_dict()
    dataset = {"study": experiment, "n_train": config.data.n_train, "n_val": config.data.n_val, "spec": spec}
    return [
        TrainConfig.from_dict(
            {**config.train, "seed": config.seeds[0], "dataset": dataset,
             "model": {"name": model.name, "options": dict(model.options)}},
            source=f"{model.display} / {experiment}",
        )
        for model in config.models
    ]


def test_every_preset_exists_at_both_scales():
    assert sorted(p.name for p in PAPER.glob("*.yaml")) == sorted(PRESET_FILES)
    assert sorted(p.name for p in SMOKE.glob("*.yaml")) == sorted(PRESET_FILES)
    assert {PAPER / name for name in PRESET_FILES} | {SMOKE / name for name in PRESET_FILES} <= set(BENCH_CONFIGS)


@pytest.mark.parametrize("path", BENCH_CONFIGS, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_bench_config_validates_short_of_training(path):
    from vision_bench.train.components import build_model, resolve_spec

    config = load_bench_config(path)
    for experiment in _experiments(config):
        get_study(experiment, n_train=config.data.n_train, n_val=config.data.n_val, n_test=config.data.n_test)
    for train_config in _first_cell_configs(config):
        spec = resolve_spec(train_config)
        key = json.dumps([train_config.model.model_dump(mode="json"), spec.size])
        if key not in _BUILT_MODELS:  # presets share models; building each once keeps the test fast
            build_model(train_config, spec)
            _BUILT_MODELS.add(key)


@pytest.mark.parametrize("name", STUDY_FILES)
def test_study_presets_cover_one_setting_with_five_experiments(name):
    for folder, count in ((PAPER, 5), (SMOKE, 1)):
        experiments = _experiments(load_bench_config(folder / name))
        study, setting = name.removesuffix(".yaml").split("_")
        assert len(experiments) == count
        assert {setting_of(e) for e in experiments} == {f"{study}/{setting.upper()}"}


def test_alpha_sweep_covers_alpha_zero_to_one():
    experiments = _experiments(load_bench_config(PAPER / "alpha_sweep.yaml"))
    assert [alpha_of(e) for e in experiments] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert len({e.rsplit("/", 1)[0] for e in experiments}) == 1


@pytest.mark.parametrize("name", PRESET_FILES)
def test_paper_presets_use_the_paper_scale(name):
    config = load_bench_config(PAPER / name)
    assert (config.data.n_train, config.data.n_val, config.data.n_test) == (100_000, 1_000, 1_000)
    assert len(set(config.seeds)) == 3
    assert tuple(config.data.spec["size"]) == (128, 128)
    expected = ({"svib:i2i-cnn", "svib:i2i-vit", "svib:oracle", "unet:resnet18"} if name == "alpha_sweep.yaml"
                else {"bottleneck:resnet18", "unet:resnet18", "vit:vit_small_patch16_224"})
    assert {m.name for m in config.models} == expected
    for train_config in _first_cell_configs(config):
        training = train_config.training
        assert (training.batch_size, training.epochs, training.precision) == (64, 10, "bf16")
        assert train_config.schedule.warmup_steps == 200
        assert train_config.checkpoint.select_on == "val_id"
        conditioned = train_config.model.options.get("task_conditioning", False)
        assert conditioned is name.startswith("compgen")


def _family(model_name: str) -> str:
    """`unet` for unet:test_resnet and unet:resnet18; SVIB's presets are their own family each."""
    return model_name if model_name.startswith("svib:") else model_name.split(":")[0]


@pytest.mark.parametrize("name", PRESET_FILES)
def test_smoke_presets_stay_tiny(name):
    config = load_bench_config(SMOKE / name)
    assert len(config.seeds) == 1
    assert config.data.n_train <= 32 and config.data.n_test <= 16
    assert all(m.name.startswith("svib:") or m.name.split(":")[1].startswith("test_") for m in config.models)
    paper = {_family(m.name): m.options.get("task_conditioning") for m in load_bench_config(PAPER / name).models}
    assert {_family(m.name): m.options.get("task_conditioning") for m in config.models}.items() <= paper.items()
    for train_config in _first_cell_configs(config):
        assert train_config.training.epochs == 1

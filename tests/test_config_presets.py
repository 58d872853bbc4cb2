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

from render.spec import RenderSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.bench.config import BenchConfig, resolve_experiments, setting_of  # noqa: E402
from vision_bench.bench.runner import load_bench_config  # noqa: E402
from vision_bench.tasks.config import experiment_canvas  # noqa: E402
from vision_bench.tasks.studies import STUDIES, get_study  # noqa: E402
from vision_bench.tasks.studies.builder import alpha_of  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
PAPER, SMOKE = CONFIGS / "paper", CONFIGS / "smoke"
STUDY_FILES = [f"compgen_c{i}.yaml" for i in range(1, 4)] + [f"envgen_g{i}.yaml" for i in range(1, 6)]
GCOG_FILES = ["gcog_distractor.yaml", "gcog_systematic.yaml", "gcog_systematic_depth3.yaml", "gcog_productive.yaml"]
CARC_FILES = ["carc_3shot.yaml", "carc_systematicity.yaml"]
PRESET_FILES = [*STUDY_FILES, "alpha_sweep.yaml", *GCOG_FILES, *CARC_FILES, "worldmodel.yaml"]
"""Presets at both scales, configs/paper and configs/smoke."""
REGIME_FILES = {"regime_100k_100ep.yaml": (100_000, 100), "regime_250k_50ep.yaml": (250_000, 50),
                "regime_500k_20ep.yaml": (500_000, 20), "regime_1m_10ep.yaml": (1_000_000, 10)}
"""COGITAO's learning regimes (paper 000, Table 3): training samples and epochs."""
PAPER_ONLY_FILES = [*REGIME_FILES, "experiment0.yaml", "sample_efficiency.yaml"]
PAPER_FILES = [*PRESET_FILES, *PAPER_ONLY_FILES]
COGITAO_MODEL_FILES = ["cogitao_sample_efficiency.yaml", "cogitao_envgen.yaml", "cogitao_envgen_g3_g4.yaml"]
"""Paper-scale presets of COGITAO's own baselines (`cogitao:`) at the release's recipe (batch 32, fp16)."""
CARC_MODEL_FILES = ["carc_mlc.yaml"]
"""Paper-scale presets of C-ARC's MLC model (`carc:mlc`) and its Table 2 ablations, at the paper's optimizer."""
GCOG_MODEL_FILES = ["gcog_models.yaml"]
"""Paper-scale presets of gCOG's own six architectures (`gcog:`) on the gCOG splits."""
SVIB_FILES = ["svib.yaml"]
"""Presets at both scales with SVIB's own scale (64,000 / 8,000 episodes, batch 40), checked on their own."""
CONDITIONED = ("compgen", "experiment0", "regime_", "sample_efficiency", "worldmodel")
"""Presets whose models read COGITAO's task codes (task_conditioning: true)."""
RULE_CONDITIONED = ("gcog_",)
"""Presets whose models read rule codes: task_conditioning is the whole vocabulary (FULL_VOCAB_SIZE). The
others (envgen, alpha, carc) are unconditioned: one sequence per experiment, or C-ARC's grammar read from
the study pairs."""
CARC_IMAGE_SIZE = {"carc_3shot.yaml": 192, "carc_systematicity.yaml": 256}
"""C-ARC's episode canvases are larger than a grid (21 x 44, 30 x 44 cells): 4-9 pixels per cell."""
SMOKE_SCALE = {"worldmodel.yaml": (512, 3), "carc_3shot.yaml": (40, 1), "carc_systematicity.yaml": (40, 1)}
"""(training samples, epochs) of smoke presets above 32 and 1: the world model needs some training before a
rollout means anything (its smoke run still takes minutes); C-ARC trains on whole episodes of 10 queries."""


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
    assert sorted(p.name for p in PAPER.glob("*.yaml")) == sorted([*PAPER_FILES, *SVIB_FILES, *COGITAO_MODEL_FILES,
                                                                    *CARC_MODEL_FILES, *GCOG_MODEL_FILES])
    assert sorted(p.name for p in SMOKE.glob("*.yaml")) == sorted([*PRESET_FILES, *SVIB_FILES])
    assert {PAPER / name for name in PAPER_FILES} | {SMOKE / name for name in PRESET_FILES} <= set(BENCH_CONFIGS)


@pytest.mark.parametrize("family, files", [("gcog", GCOG_FILES), ("carc", CARC_FILES)])
def test_rule_presets_cover_every_study_of_their_family(family, files):
    experiments = [e for name in files for e in _experiments(load_bench_config(PAPER / name))]
    assert sorted(experiments) == sorted(i for i in STUDIES.names() if i.startswith(f"{family}/"))


@pytest.mark.parametrize("path", BENCH_CONFIGS, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_conditioned_models_read_the_codes_of_their_studies(path):
    """A conditioned model's vocabulary holds every token of its studies' codes, and its task_code_length is theirs
    when given (left unset, training sets the study's: test_gcog_models)."""
    from vision_bench.models.conditioning import resolve_vocab_size
    from vision_bench.tasks.task_code import FULL_VOCAB_SIZE, VOCAB_SIZE

    config = load_bench_config(path)
    studies = [get_study(e, n_train=1, n_val=1, n_test=1) for e in _experiments(config) if e in STUDIES]
    for model in config.models:
        vocabulary = resolve_vocab_size(model.options.get("task_conditioning"))
        if vocabulary is None:
            continue
        for study in studies:
            needed = VOCAB_SIZE if study.rules is None else FULL_VOCAB_SIZE
            assert vocabulary >= needed, f"{model.display}: task_conditioning {vocabulary} < {needed}"
            given = model.options.get("task_code_length", study.task_code_length)
            assert given == study.task_code_length, model.display


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


@pytest.mark.parametrize("name", PAPER_FILES)
def test_paper_presets_use_the_paper_scale(name):
    from vision_bench.tasks.task_code import FULL_VOCAB_SIZE

    config = load_bench_config(PAPER / name)
    n_train, epochs = REGIME_FILES.get(name, (100_000, 10))
    assert (config.data.n_train, config.data.n_val, config.data.n_test) == (n_train, 1_000, 1_000)
    assert len(set(config.seeds)) == (1 if name in CARC_FILES else 3)  # C-ARC: its four splits are the repeats
    vits = [model for model in config.models if model.name.startswith("vit:")]
    if name in CARC_IMAGE_SIZE or not (vits or name in REGIME_FILES):
        assert tuple(config.data.spec["size"]) == (CARC_IMAGE_SIZE.get(name, 128),) * 2
    else:  # one ViT patch (or, for the grid models of the regimes, one drawn cell) is one grid cell: fixed cells
        spec = RenderSpec.from_dict(config.data.spec)  # from the top-left corner, the patch as wide as a cell
        assert (spec.layout.mode, spec.layout.anchor) == ("cell", "top-left")
        assert all(model.options["patch_size"] == spec.layout.cell_size for model in vits)
        canvas = max(max(experiment_canvas(get_study(e))) for e in _experiments(config))
        side, drawn = spec.size[0], canvas * spec.layout.cell_size
        assert spec.size[0] == spec.size[1] and side % 32 == 0, "the CNNs need a multiple of their stride 32"
        assert drawn <= side < drawn + 32, "no more margin than needed"
    expected = ({"svib:i2i-cnn", "svib:i2i-vit", "svib:cell-oracle", "unet:resnet18"} if name == "alpha_sweep.yaml"
                else {"cogitao:grid-tf"} if name in REGIME_FILES  # Table 3's model, the paper's own
                else {"bottleneck:resnet18", "unet:resnet18", "vit:vit_small_patch16_224"})
    assert {m.name for m in config.models} == expected
    for train_config in _first_cell_configs(config):
        training = train_config.training
        assert (training.batch_size, training.epochs, training.precision) == (64, epochs, "bf16")
        assert train_config.schedule.warmup_steps == 200
        assert train_config.checkpoint.select_on == "val_id"
        conditioned = train_config.model.options.get("task_conditioning", False)
        assert conditioned == (True if name.startswith(CONDITIONED) else
                               FULL_VOCAB_SIZE if name.startswith(RULE_CONDITIONED) else False)
        assert type(conditioned) is (int if name.startswith(RULE_CONDITIONED) else bool)


def test_cogitao_sample_efficiency_uses_the_releases_recipe():
    """COGITAO's five baselines, each once, on grids, at the release's recipe: batch 32, fp16, 10 epochs (LLaDA
    20 at its own learning rate), 1,000 validation and test samples, 3 seeds."""
    from vision_bench.models.cogitao import PRESETS

    config = load_bench_config(PAPER / "cogitao_sample_efficiency.yaml")
    assert [m.name for m in config.models] == [f"cogitao:{preset}" for preset in PRESETS]
    assert (config.data.n_val, config.data.n_test, len(set(config.seeds))) == (1_000, 1_000, 3)
    for train_config in _first_cell_configs(config):
        training = train_config.training
        assert (training.batch_size, training.precision, training.grad_clip) == (32, "fp16", 1.0)
        assert train_config.model.options.get("input", "grid") == "grid"
    llada = next(m for m in config.models if m.name == "cogitao:llada")
    merged = llada.train_sections(config.train)
    assert (merged["training"]["epochs"], merged["optimizer"]["lr"], merged["optimizer"]["weight_decay"]) == (
        20, 0.0002, 0.01)


def test_cogitao_envgen_reads_grids_and_images_of_one_canvas():
    """ResNet and Grid-TF on grids and on images, and the Vanilla-TF-sized RoPE ViT, at the release's recipe on
    EnvGen's translate experiments; every image model reads one patch per cell of a 15 x 15 canvas, as the grid
    models do."""
    from vision_bench.train.components import build_model, resolve_config, resolve_spec

    config = load_bench_config(PAPER / "cogitao_envgen.yaml")
    assert _experiments(config) == ["envgen/G1/1", "envgen/G3/1", "envgen/G4/1"]
    assert {max(experiment_canvas(get_study(e))) for e in _experiments(config)} == {15}
    assert [(m.name, m.options.get("input", "grid")) for m in config.models if m.name.startswith("cogitao:")] == [
        ("cogitao:resnet", "grid"), ("cogitao:resnet", "image"), ("cogitao:grid-tf", "grid"),
        ("cogitao:grid-tf", "image")]
    assert (config.data.n_train, config.data.n_val, config.data.n_test, len(set(config.seeds))) == (
        100_000, 1_000, 1_000, 3)
    for train_config, model in zip(_first_cell_configs(config), config.models):
        training = train_config.training
        assert (training.batch_size, training.epochs, training.precision, training.grad_clip) == (32, 10, "fp16", 1.0)
        spec = resolve_spec(train_config)
        built = build_model(resolve_config(train_config, spec, get_study("envgen/G1/1")), spec)
        if model.name.startswith("cogitao:"):  # grid input: training sets grid_size to the experiment's canvas
            assert built.grid_size == 15
        else:
            assert built.describe()["patch_size"] * 15 == config.data.spec["size"][0]


def test_cogitao_envgen_g3_g4_runs_every_experiment_on_one_canvas():
    """G3 and G4, experiments 1-5 (where the paper's drop is), ResNet and Grid-TF on grids and on images: the
    canvas is the largest grid of the ten experiments (G3-5's 20x20), and the image is that canvas at 8 px a cell."""
    from vision_bench.train.components import build_model, resolve_config, resolve_spec

    config = load_bench_config(PAPER / "cogitao_envgen_g3_g4.yaml")
    experiments = _experiments(config)
    assert experiments == [f"envgen/{g}/{e}" for g in ("G3", "G4") for e in range(1, 6)]
    canvas = max(max(experiment_canvas(get_study(e))) for e in experiments)
    assert canvas == 20 and config.data.spec["size"] == [8 * canvas] * 2
    assert [(m.name, m.options.get("input", "grid")) for m in config.models] == [
        ("cogitao:resnet", "grid"), ("cogitao:resnet", "image"), ("cogitao:grid-tf", "grid"),
        ("cogitao:grid-tf", "image")]
    for train_config in _first_cell_configs(config):
        spec = resolve_spec(train_config)
        build_model(resolve_config(train_config, spec, get_study("envgen/G3/5")), spec)  # every model builds


def test_carc_mlc_runs_table_2_on_the_four_systematicity_splits():
    """carc:mlc and its three ablations (copy task off, no primitives, no level-1 study examples) on the four
    Systematicity splits, at the paper's optimizer; each builds at the paper's 5.7M parameters."""
    from vision_bench.train.components import build_model, resolve_spec

    config = load_bench_config(PAPER / "carc_mlc.yaml")
    assert _experiments(config) == [f"carc/systematicity/{seed}" for seed in (1860, 1870, 1880, 1890)]
    assert [(m.name, dict(m.options)) for m in config.models] == [
        ("carc:mlc", {}), ("carc:mlc", {"copy_task": False}), ("carc:mlc", {"drop_study": "primitives"}),
        ("carc:mlc", {"drop_study": "level-1"})]
    for train_config in _first_cell_configs(config):
        optimizer, training = train_config.optimizer, train_config.training
        assert (optimizer.lr, optimizer.weight_decay, optimizer.betas) == (0.01, 0.01, (0.9, 0.95))
        assert (training.batch_size, training.grad_clip, train_config.schedule.min_lr_ratio) == (200, None, 0.05)
        built = build_model(train_config, resolve_spec(train_config))
        assert built.describe()["parameters"] == 5_720_213


def _family(model_name: str) -> str:
    """`unet` for unet:test_resnet and unet:resnet18; SVIB's presets are their own family each."""
    return model_name if model_name.startswith("svib:") else model_name.split(":")[0]


@pytest.mark.parametrize("name", [*PRESET_FILES, *SVIB_FILES])
def test_smoke_presets_stay_tiny(name):
    config = load_bench_config(SMOKE / name)
    n_train, epochs = SMOKE_SCALE.get(name, (32, 1))
    assert len(config.seeds) == 1
    assert config.data.n_train <= n_train and config.data.n_test <= 16
    assert all(m.name.startswith("svib:") or m.name.split(":")[1].startswith("test_") for m in config.models)
    paper = {_family(m.name): _conditioning(m.options) for m in load_bench_config(PAPER / name).models}
    assert {_family(m.name): _conditioning(m.options) for m in config.models}.items() <= paper.items()
    for train_config in _first_cell_configs(config):
        assert train_config.training.epochs == epochs


def _conditioning(options: dict) -> tuple:
    """What a model reads of the task code: its vocabulary and code length options."""
    return options.get("task_conditioning"), options.get("task_code_length")


def test_the_svib_paper_preset_keeps_svibs_scale_and_states_its_gate():
    """configs/paper/svib.yaml: SVIB's four tasks at its alphas, 64,000 / 8,000 episodes, 128 px, batch 40,
    its five models (two of them state-space models) at full size, and the gate and verdict rule of
    docs/results/svib."""
    config = load_bench_config(PAPER / "svib.yaml")
    experiments = _experiments(config)
    assert {e.rsplit("/", 1)[0] for e in experiments} == {f"svib/{task}" for task in ("S-A", "S-NA", "M-A", "M-NA")}
    assert sorted({alpha_of(e) for e in experiments}) == [0.0, 0.2, 0.4, 0.6]
    assert (config.data.n_train, config.data.n_test) == (64_000, 8_000)
    assert tuple(config.data.spec["size"]) == (128, 128) and len(set(config.seeds)) == 3
    assert {m.name for m in config.models} == {"svib:i2i-cnn", "svib:i2i-vit", "svib:oracle", "svib:ssm-vae",
                                                "svib:ssm-slot", "unet:resnet18"}
    assert all(not m.options for m in config.models)  # SVIB's sizes
    assert config.gate is not None and config.gate.describe() == "factor_accuracy on test_id >= 90"
    for train_config in _first_cell_configs(config):
        assert train_config.training.batch_size == 40

"""One config base and one error formatter: dotted keys and suggestions at any depth, nested
sections checked at load time, and dict forms (so experiment hashes) unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from render.spec import RenderSpec
from vision_bench.bench.config import BenchConfig
from vision_bench.config_files import check_override_keys
from vision_bench.errors import ConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.train.config import TrainConfig

REPO = Path(__file__).resolve().parents[1]
MINIMAL = {"dataset": {"study": "envgen/G1/1"}, "model": {"name": "unet:test_resnet"}}
BENCH = {"experiments": ["envgen/G1/1"], "models": ["unet:test_resnet"]}
INLINE = {
    "seed": 3,
    "dataset": {
        "task": {"transformations": ["rot90", "mirror_vertical"], "depth": [1, 2], "grid_height": 12,
                 "grid_width": [8, 12], "samples": {"train": 10}},
        "n_train": 8, "n_val": 4,
        "spec": {"size": [48, 48], "layout": "fit", "blur": "gaussian:1.5", "palette": "arc"},
    },
    "model": {"name": "unet:test_resnet", "options": {"decoder_width": 8}},
}


def _digest(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


# ----------------------------------------------------------------------------- dict forms


def test_experiment_hashes_are_those_computed_before_the_typed_sections() -> None:
    """Pinned with the code before this change: old runs resume and bench folders stay valid."""
    smoke = TrainConfig.from_yaml(REPO / "configs" / "train_smoke.yaml")
    assert smoke.experiment_hash() == "d352ca02ea3c9192ab1c20f57689fd2f62457d1305ec336d9f3778ee33f73734"
    inline = TrainConfig.from_dict(INLINE)
    assert inline.experiment_hash() == "fc5e1fc8334d1c61309389b1138ec0a95267c238345d3ec544b2d12452a231c8"
    assert inline.to_dict()["dataset"]["task"] == INLINE["dataset"]["task"]  # kept as written
    assert inline.to_dict()["dataset"]["spec"] == INLINE["dataset"]["spec"]
    resolved = smoke.replace(dataset=smoke.dataset.model_copy(update={"spec": RenderSpec(size=(64, 64)).to_dict()}))
    assert resolved.experiment_hash() == "167a860ad9d2c2ca3fe6ca2c2f2b5e510be9c968394cea1d7d877ab6f2133bf1"
    bench = BenchConfig.from_yaml(REPO / "configs" / "bench_smoke.yaml")
    assert _digest(bench.to_dict()) == "568ed574fb75cae12a8e46c92e1ffde2c3de8171b181087fca987b5a24b1d25e"
    task = TaskConfig.from_yaml(REPO / "configs" / "reference_generation.yaml")
    assert _digest(task.to_dict()) == "898b3950e6f63eaaa73e0ecfe43c2917b8ecaab05a8030ed07cfd2a4b2119ac9"


def test_nested_sections_are_given_typed() -> None:
    dataset = TrainConfig.from_dict(INLINE).dataset
    assert dataset.render_spec() == RenderSpec(size=(48, 48), layout="fit", blur="gaussian:1.5", palette="arc")
    task = dataset.task_config()
    assert isinstance(task, TaskConfig) and task.grid_height == (12, 12) and task.count("train") == 10
    plain = TrainConfig.from_dict(MINIMAL).dataset
    assert plain.render_spec() is None and plain.task_config() is None


# ----------------------------------------------------------------------------- messages


@pytest.mark.parametrize(
    ("config", "data", "expected"),
    [
        (TrainConfig, {**MINIMAL, "trainin": {}}, "training config: trainin: unknown key; did you mean 'training'? "
                                                 "(known keys: seed, dataset, model, optimizer, schedule, training, "),
        (TrainConfig, {**MINIMAL, "training": {"epoch": 3}},
         "training config: training.epoch: unknown key; did you mean 'epochs'? (known keys: batch_size, "),
        (TrainConfig, {**MINIMAL, "dataset": {"study": "x", "spec": {"palete": "arc"}}},
         "training config: dataset.spec.palete: unknown key; did you mean 'palette'? (known keys: size, palette, "),
        (TrainConfig, {**MINIMAL, "dataset": {"study": "x", "spec": {"layout": {"mode": "cell", "cell_sise": 4}}}},
         "training config: dataset.spec.layout.cell_sise: unknown key; did you mean 'cell_size'? "
         "(known keys: mode, cell_size, anchor)"),
        (TrainConfig, {**MINIMAL, "dataset": {"task": {"transformations": ["rot90"], "samples": {"tran": 3}}}},
         "training config: dataset.task.samples.tran: unknown key; did you mean 'train'? "
         "(known keys: train, val_id, val_ood, test_id, test_ood)"),
        (TrainConfig, {**MINIMAL, "dataset": {"task": {"transformations": ["rot9"]}}},
         "training config: dataset.task.transformations: unknown transformation 'rot9'; did you mean 'rot90'?"),
        (BenchConfig, {**BENCH, "train": {"training": {"epoch": 1}}},
         "bench config: train.training.epoch: unknown key; did you mean 'epochs'? (known keys: batch_size, "),
        (BenchConfig, {**BENCH, "models": [{"name": "m", "train": {"runtime": {"devise": "cpu"}}}]},
         "bench config: models.0.train.runtime.devise: unknown key; did you mean 'device'? (known keys: device, "),
        (BenchConfig, {**BENCH, "data": {"spec": {"blur": "gaussian:-1"}}},
         "bench config: data.spec.blur: gaussian blur needs sigma in (0, 32] pixels"),
        (BenchConfig, {**BENCH, "train": {"seed": 1}}, "bench config: train: train.seed is set per cell"),
        (TrainConfig, {"model": {"name": "x"}}, "training config: dataset: required key is missing"),
        (TrainConfig, {**MINIMAL, "training": {"epochs": "ten"}},
         "training config: training.epochs: Input should be a valid integer, unable to parse string as an integer, "
         "got 'ten'"),
        (TaskConfig, {"transformations": ["rot90"], "object_filter": {"max_heigth": 3}},
         "config: object_filter.max_heigth: unknown key; did you mean 'max_height'?"),
        (TaskConfig, {"transformations": ["rot90"], "object_filter": [{}, {"max_heigth": 3}]},
         "config: object_filter.1.max_heigth: unknown key; did you mean 'max_height'?"),
    ],
)
def test_every_config_names_the_full_dotted_key_and_the_closest_one(config: type, data: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config.from_dict(data)
    assert str(raised.value).startswith(expected)


def test_a_bad_render_spec_fails_a_bench_config_at_load(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text("experiments: [envgen/G1/1]\nmodels: [unet:test_resnet]\ndata: {spec: {size: [32, 32]}}\n")
    assert BenchConfig.from_yaml(path).data.spec == {"size": [32, 32]}
    with pytest.raises(ConfigError,
                       match=rf"^{path} with --set: data\.spec\.palete: unknown key; did you mean 'palette'"):
        BenchConfig.from_yaml(path, ["data.spec.palete=arc"])
    with pytest.raises(ConfigError, match=rf"^{path} with --set: data\.spec\.size: each side must be 8\.\.1024 pixels"):
        BenchConfig.from_yaml(path, ["data.spec.size=[4, 4]"])


def test_set_keys_are_checked_inside_nested_sections_too() -> None:
    with pytest.raises(ConfigError, match=r"^--set dataset\.spec\.sise=3: dataset\.spec has no key 'sise'; "
                                          r"did you mean 'size'\?"):
        check_override_keys(TrainConfig, ["dataset.spec.sise=3"])
    with pytest.raises(ConfigError, match=r"dataset\.task\.samples has no key 'tran'; did you mean 'train'\?"):
        check_override_keys(TrainConfig, ["dataset.task.samples.tran=3"])
    check_override_keys(TrainConfig, ["dataset.spec.layout.mode=fit", "model.options.anything=1"])


def test_configs_are_frozen_and_refuse_a_non_mapping() -> None:
    config = TrainConfig.from_dict(MINIMAL)
    with pytest.raises(Exception, match="frozen"):
        config.seed = 1  # type: ignore[misc]
    expected = "^bench config: expected a mapping of keys, got list; write the config as `key: value` lines$"
    with pytest.raises(ConfigError, match=expected):
        BenchConfig.from_dict([1])


# ----------------------------------------------------------------------------- round trip

_SPECS = [{}, {"size": [32, 32]}, {"layout": "cell:2", "gridlines": True}, {"palette": "arc", "background": "white"},
          {"blur": "box:3", "antialias": 2, "jitter": {"max_shift": 2}}]
_TASKS = [{"transformations": ["rot90"]}, {"sequences": [["translate_up", "rot90"]], "grid_height": [5, 9]}]
_finite = st.floats(min_value=1e-6, max_value=10.0, allow_nan=False)


@st.composite
def train_configs(draw: st.DrawFn) -> dict:
    source = draw(st.sampled_from(["study", "task"]))
    dataset: dict = {"study": "envgen/G1/1"} if source == "study" else {"task": draw(st.sampled_from(_TASKS))}
    dataset["spec"] = draw(st.sampled_from(_SPECS))
    if draw(st.booleans()):
        dataset["n_train"] = draw(st.integers(1, 10_000))
    select_on = draw(st.sampled_from(["val_id", "val_ood"]))
    return {
        "seed": draw(st.integers(0, 2**32 - 1)),
        "dataset": dataset,
        "model": {"name": draw(st.sampled_from(["unet:test_resnet", "vit:test_vit"])),
                  "options": draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9)))},
        "optimizer": {"lr": draw(_finite), "betas": [draw(st.floats(0, 0.999)), draw(st.floats(0, 0.999))]},
        "schedule": {"warmup_steps": draw(st.integers(0, 500)), "min_lr_ratio": draw(st.floats(0, 1))},
        "training": {"batch_size": draw(st.integers(1, 256)), "max_steps": draw(st.none() | st.integers(1, 99)),
                     "grad_clip": draw(st.none() | _finite), "precision": draw(st.sampled_from(["fp32", "bf16"]))},
        "checkpoint": {"select_on": select_on, "metric": draw(st.sampled_from(["loss", "mse", "grid_accuracy"]))},
        "runtime": {"num_workers": draw(st.integers(0, 8)), "compile": draw(st.booleans())},
    }


@settings(max_examples=40, deadline=None)
@given(train_configs())
def test_to_dict_and_from_dict_round_trip(data: dict) -> None:
    config = TrainConfig.from_dict(data)
    again = TrainConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config and again.experiment_hash() == config.experiment_hash()
    assert again.dataset.spec == data["dataset"]["spec"]

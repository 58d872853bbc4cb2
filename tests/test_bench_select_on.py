"""The checkpoint a bench evaluates: `--select-on` on `bench` and `train`, its refusal where a study has no OOD
validation split, and the report's sentence saying which checkpoint every model was evaluated on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cli_errors import cli_error  # noqa: E402

from vision_bench.bench.config import BenchConfig  # noqa: E402
from vision_bench.bench.summary import checkpoint_choice  # noqa: E402
from vision_bench.cli import main  # noqa: E402

TINY_BENCH = {"experiments": ["envgen/G1/1"], "models": [{"name": "unet:test_resnet", "options": {"decoder_width": 4}}],
              "baselines": ["copy_input"], "data": {"n_train": 4, "n_val": 2, "n_test": 2, "spec": {"size": [32, 32]}},
              "train": {"training": {"batch_size": 2, "max_steps": 1}}}
PAPER = "(COGITAO's paper: best by validation loss on val_ood)"


def _write(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_select_on_is_the_same_change_as_its_set_and_reaches_the_models_that_set_their_own(tmp_path: Path) -> None:
    own = {"name": "vit:test_vit", "label": "ViT", "train": {"checkpoint": {"select_on": "val_id", "metric": "mse"}}}
    path = _write(tmp_path, {**TINY_BENCH, "models": [*TINY_BENCH["models"], own]})
    flagged = BenchConfig.from_yaml(path).with_select_on("val_ood")
    set_by_hand = BenchConfig.from_yaml(path, ["train.checkpoint.select_on=val_ood"])
    assert flagged.train == set_by_hand.train == {**TINY_BENCH["train"], "checkpoint": {"select_on": "val_ood"}}
    assert flagged.models[0] == set_by_hand.models[0]
    assert flagged.models[1].train == {"checkpoint": {"select_on": "val_ood", "metric": "mse"}}  # its metric kept
    assert set_by_hand.models[1].checkpoint(set_by_hand.train).select_on == "val_id"  # --set leaves it as it was
    assert [m.checkpoint(flagged.train).select_on for m in flagged.models] == ["val_ood", "val_ood"]


@pytest.mark.slow  # trains one cell for one step, twice refused or resumed
def test_bench_select_on_reaches_every_cell_and_is_part_of_the_bench(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path, out = _write(tmp_path, TINY_BENCH), tmp_path / "out"
    assert main(["bench", str(path), "--out", str(out), "--select-on", "val_ood", "--no-progress"]) == 0
    assert yaml.safe_load((out / "bench.yaml").read_text())["train"]["checkpoint"] == {"select_on": "val_ood"}
    [cell_config] = (out / "runs").rglob("config.yaml")
    assert yaml.safe_load(cell_config.read_text())["checkpoint"]["select_on"] == "val_ood"
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "checkpoint: best by validation loss on val_ood, as COGITAO's paper chose." in report
    # the flag is part of the bench: left out, the folder holds another bench; its --set is the same bench
    cli_error(["bench", path, "--out", out, "--no-progress"], capsys, "holds another bench (it differs in train)")
    assert main(["bench", str(path), "--out", str(out), "--set", "train.checkpoint.select_on=val_ood",
                 "--no-progress"]) == 0
    assert "0 cells computed, 2 already finished" in capsys.readouterr().out


def test_select_on_val_ood_is_refused_for_a_study_without_an_ood_validation_split(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, {**TINY_BENCH, "experiments": ["sample-efficiency/S2/1"],
                             "evaluate": {"splits": ["test_id"]}})
    out = tmp_path / "out"
    cli_error(["bench", path, "--out", out, "--select-on", "val_ood"], capsys,
              "experiment sample-efficiency/S2/1 has no OOD validation split", "--select-on val_id")
    cli_error(["bench", path, "--out", out, "--set", "train.checkpoint.select_on=val_ood"], capsys,
              "has no OOD validation split")
    assert not out.exists()


@pytest.mark.parametrize("how", ["flag", "set", "yaml"])
def test_train_select_on_val_ood_is_refused_up_front_for_a_study_without_an_ood_validation_split(
        how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = {"dataset": {"study": "sample-efficiency/S2/1", "n_train": 4, "n_val": 2, "spec": {"size": [32, 32]}},
           "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
           "training": {"batch_size": 2, "max_steps": 1}}
    if how == "yaml":
        run["checkpoint"] = {"select_on": "val_ood"}
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump(run), encoding="utf-8")
    out = tmp_path / "run"
    extra = {"flag": ["--select-on", "val_ood"], "set": ["--set", "checkpoint.select_on=val_ood"], "yaml": []}[how]
    cli_error(["train", config, "--out", out, *extra], capsys,
              "study sample-efficiency/S2/1 has no OOD validation split", "--select-on val_id")
    assert not out.exists()


class _Stop(Exception):
    """Raised where training would start."""


def test_train_select_on_sets_the_runs_checkpoint_split(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import vision_bench.train

    seen = []

    def train(config: object, *args: object, **kwargs: object) -> None:
        seen.append(config)
        raise _Stop

    monkeypatch.setattr(vision_bench.train, "train", train)
    config = Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml"
    for flag, split in (([], "val_id"), (["--select-on", "val_ood"], "val_ood")):
        with pytest.raises(_Stop):
            main(["train", str(config), "--out", str(tmp_path / "run"), *flag])
        assert seen.pop().checkpoint.select_on == split


@pytest.mark.parametrize(("change", "said"), [
    ({}, f"best by validation loss on val_id {PAPER}"),
    ({"train": {"checkpoint": {"select_on": "val_ood"}}},
     "best by validation loss on val_ood, as COGITAO's paper chose"),
    ({"train": {"checkpoint": {"select_on": "val_ood", "metric": "grid_accuracy"}}},
     f"best by validation grid accuracy on val_ood {PAPER}"),
    ({"evaluate": {"checkpoint": "last"}}, f"last, after 1 step {PAPER}"),
    ({"evaluate": {"checkpoint": "last"}, "train": {"training": {"epochs": 10}}}, f"last, after 10 epochs {PAPER}"),
    ({"models": [{"name": "unet:test_resnet", "label": "CNN"},
                 {"name": "vit:test_vit", "label": "ViT", "train": {"checkpoint": {"metric": "mse"}}}]},
     f"best by validation loss on val_id for CNN, best by validation MSE on val_id for ViT {PAPER}"),
])
def test_the_report_says_which_checkpoint_every_model_was_evaluated_on(change: dict, said: str, tmp_path: Path) -> None:
    from vision_bench.bench.report import Paragraph
    from vision_bench.bench.summary import build_report

    config = BenchConfig.from_dict({**TINY_BENCH, **change})
    assert checkpoint_choice(config) == said
    first = next(block for block in build_report(config, [], tmp_path).blocks if isinstance(block, Paragraph))
    assert first.text.endswith(f"checkpoint: {said}.")


@pytest.mark.parametrize("experiments", [["svib/S-A/0.6"], ["gcog/distractor/10"], ["carc/3shot/1860"],
                                         ["alpha/translate_up/0.2"]])
def test_the_report_names_cogitaos_checkpoint_choice_only_for_cogitaos_studies(experiments: list[str]) -> None:
    config = BenchConfig.from_dict({**TINY_BENCH, "experiments": experiments})
    assert checkpoint_choice(config) == "best by validation loss on val_id"
    assert checkpoint_choice(config.with_select_on("val_ood")) == "best by validation loss on val_ood"
    mixed = BenchConfig.from_dict({**TINY_BENCH, "experiments": [*experiments, "compgen/C1"]})
    assert checkpoint_choice(mixed) == f"best by validation loss on val_id {PAPER}"


@pytest.mark.parametrize(("command", "key"), [("bench", "train.checkpoint.select_on"),
                                              ("train", "checkpoint.select_on")])
def test_select_on_beside_a_set_of_the_same_key_to_another_split_is_refused(
        command: str, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if command == "bench":
        config = _write(tmp_path, TINY_BENCH)
    else:
        config = Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml"
    out = tmp_path / "out"
    section = key.rsplit(".", 1)[0]
    for setting in (f"{key}=val_id", f"{section}={{select_on: val_id}}"):
        cli_error([command, config, "--out", out, "--select-on", "val_ood", "--set", setting], capsys,
                  "--select-on val_ood and --set", "choose different splits", "give one of the two")
    assert not out.exists()
    from vision_bench.commands._common import check_select_on_agrees

    check_select_on_agrees("val_ood", [f"{key}=val_ood", f"{section}={{metric: mse}}", "seed=1"], key)  # agree


def test_sample_efficiency_benches_name_the_releases_choice_without_an_ood_split() -> None:
    config = BenchConfig.from_dict({**TINY_BENCH, "experiments": ["sample-efficiency/S2/1"]})
    assert checkpoint_choice(config) == "best by validation loss on val_id, as COGITAO's paper chose"
    last = BenchConfig.from_dict({**TINY_BENCH, "experiments": ["sample-efficiency/S2/1"],
                                  "evaluate": {"checkpoint": "last"}})
    assert checkpoint_choice(last) == "last, after 1 step (COGITAO's paper: best by validation loss on val_id)"

"""`vision-bench export-model` and `load_pretrained`: a trained model leaves the project and comes back
with exactly the same outputs; timm builds its encoder by name from the export; folders and hub ids; the model
card; errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
import yaml
from cli_errors import cli_error
from safetensors.torch import load_file

from vision_bench.cli import main
from vision_bench.models import create_model, load_pretrained, read_model_config, save_pretrained
from vision_bench.models.pretrained import ModelFolderError
from vision_bench.train import TrainConfig, load_checkpoint, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZE = 32
EXPORT_FILES = {"config.json", "model.safetensors", "encoder", "README.md"}


def run_config(model_name: str, options: dict) -> TrainConfig:
    return TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": "envgen/G1/1", "n_train": 8, "n_val": 2, "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": model_name, "options": options},
        "training": {"batch_size": 4, "max_steps": 1},
    })


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    """unet:test_resnet trained for one step, with its encoder cut after stride 16 (timm's out_indices)."""
    run_dir = tmp_path_factory.mktemp("run")
    train(run_config("unet:test_resnet", {"decoder_width": 4, "out_indices": [0, 1, 2, 3]}), run_dir, progress=False)
    return run_dir


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "model"
    assert main(["export-model", str(trained_run), "--out", str(out)]) == 0
    return out


def fixed_images(count: int = 3, size: int = SIZE) -> torch.Tensor:
    return torch.rand(count, 3, size, size, generator=torch.Generator().manual_seed(7))


def test_load_pretrained_gives_the_trained_model_exactly(trained_run, exported) -> None:
    assert {path.name for path in exported.iterdir()} == EXPORT_FILES
    trained, _, _ = load_checkpoint(trained_run / "checkpoints" / "best.pt")
    loaded = load_pretrained(exported)
    assert not loaded.training and loaded.name == "unet:test_resnet"
    images = fixed_images()
    assert torch.equal(loaded(images), trained(images))
    assert torch.equal(loaded.predict({"input": images}), trained.predict({"input": images}))


def test_config_holds_what_rebuilds_the_model_and_nothing_of_this_machine(trained_run, exported) -> None:
    import vision_bench

    text = (exported / "config.json").read_text()
    assert str(trained_run) not in text and str(exported) not in text and str(Path.home()) not in text
    config = read_model_config(exported)
    stored = TrainConfig.from_yaml(trained_run / "config.yaml")
    assert config["architecture"] == "unet:test_resnet"
    assert config["model_args"] == {"decoder_width": 4, "out_indices": [0, 1, 2, 3], "image_size": SIZE}
    assert config["render_spec"] == stored.dataset.spec and config["render_spec"]["size"] == [SIZE, SIZE]
    assert config["image_size"] == SIZE and config["head"] == "rgb" and config["trained_steps"] == 1
    assert config["vision_bench_version"] == vision_bench.__version__
    card = (exported / "README.md").read_text()
    assert "load_pretrained" in card and "library_name: vision-bench" in card and "layer4.0.conv1.weight" in card


def timm_encoder(folder: Path, **kwargs) -> torch.nn.Module:
    """What timm builds by name from an export's encoder/ folder (timm's own layout), in eval mode."""
    return timm.create_model(f"local-dir:{folder / 'encoder'}", pretrained=True, **kwargs).eval()


def test_timm_builds_the_trained_encoder_by_name(trained_run, exported) -> None:
    """The U-Net's encoder stops at stride 16 (out_indices [0, 1, 2, 3]): timm builds that feature extractor from
    encoder/ and gives exactly the maps the decoder read; the network's layer4, which the U-Net never had, is in the
    file at timm's initialisation and listed as untrained."""
    trained, _, _ = load_checkpoint(trained_run / "checkpoints" / "best.pt")
    encoder = read_model_config(exported)["encoder"]
    assert encoder["folder"] == "encoder" and encoder["timm_name"] == "test_resnet"
    assert encoder["timm_kwargs"] == {"num_classes": 0}
    assert encoder["features"] == {"features_only": True, "out_indices": [0, 1, 2, 3]}
    assert sorted(path.name for path in (exported / "encoder").iterdir()) == ["config.json", "model.safetensors"]
    timm_config = json.loads((exported / "encoder" / "config.json").read_text())
    assert timm_config["architecture"] == "test_resnet" and timm_config["num_classes"] == 0
    assert timm_config["pretrained_cfg"]["input_size"] == [3, SIZE, SIZE]
    assert (timm_config["pretrained_cfg"]["mean"], timm_config["pretrained_cfg"]["std"]) == ([0, 0, 0], [1, 1, 1])
    assert "tag" not in timm_config["pretrained_cfg"] and "license" not in timm_config["pretrained_cfg"]
    images = fixed_images()
    with torch.no_grad():
        maps, expected = timm_encoder(exported)(images), trained.encoder(images)
    assert len(maps) == len(expected) == 4 and all(torch.equal(a, b) for a, b in zip(maps, expected))
    # the whole network, as the card says to build it: the trained stages are the U-Net's, layer4 the untrained part
    plain = timm.create_model(encoder["timm_name"], **encoder["timm_kwargs"])
    plain.load_state_dict(load_file(exported / "encoder" / "model.safetensors"))
    whole = plain.state_dict()
    untrained = encoder["untrained_keys"]
    assert untrained and all(key.startswith("layer4.") for key in untrained)
    state = trained.timm_backbone().state
    assert all(torch.equal(whole[key], value) for key, value in state.items())
    assert set(untrained) == {key for key in set(whole) - set(state) if not key.endswith(".num_batches_tracked")}
    assert "local-dir:" in (exported / "README.md").read_text() and "layer4.0.conv1.weight" in \
        (exported / "README.md").read_text()


def test_a_whole_encoder_holds_nothing_untrained(tmp_path) -> None:
    torch.manual_seed(0)
    model = create_model("bottleneck:test_resnet", image_size=SIZE, decoder_width=4, latent_dim=8).eval()
    save_pretrained(model, tmp_path / "out", options={"image_size": SIZE, "decoder_width": 4, "latent_dim": 8})
    encoder = read_model_config(tmp_path / "out")["encoder"]
    assert encoder["untrained_keys"] == [] and encoder["features"]["out_indices"] == [0, 1, 2, 3, 4]
    images = fixed_images()
    with torch.no_grad():
        maps, expected = timm_encoder(tmp_path / "out")(images), model.encoder(images)
    assert all(torch.equal(a, b) for a, b in zip(maps, expected, strict=True))


def test_vit_palette_head_and_task_code_come_back_exactly(tmp_path) -> None:
    palette = np.arange(30, dtype=np.uint8).reshape(10, 3) * 8
    options = {"image_size": SIZE, "patch_size": 8, "head": "palette", "palette_colors": palette,
               "task_conditioning": True, "decoder": "transformer", "decoder_depth": 1,
               "input_normalization": {"mean": [0.5, 0.25, 0.125], "std": [0.5, 1.0, 2.0]}}
    torch.manual_seed(0)
    model = create_model("vit:test_vit", **options).eval()
    save_pretrained(model, tmp_path / "vit", options=options)
    loaded = load_pretrained(tmp_path / "vit")
    images, codes = fixed_images(2), torch.tensor([[1, 2, 0, 0], [3, 0, 0, 0]])
    assert torch.equal(loaded(images, codes), model(images, codes))
    config = read_model_config(tmp_path / "vit")
    assert config["model_args"]["palette_colors"] == palette.tolist() and config["task_conditioning"] > 0
    assert "task_code" in (tmp_path / "vit" / "README.md").read_text()
    # a ViT's encoder is the timm model itself (less its classifier), which timm builds whole, with the model's
    # input normalisation as its mean and std
    encoder = config["encoder"]
    assert encoder["timm_kwargs"] == {"patch_size": 8, "num_classes": 0, "img_size": SIZE}
    assert encoder["features"] == {} and encoder["untrained_keys"] == []
    vit = timm_encoder(tmp_path / "vit")
    data = timm.data.resolve_data_config(model=vit)
    assert tuple(data["mean"]) == (0.5, 0.25, 0.125) and tuple(data["std"]) == (0.5, 1.0, 2.0)
    assert tuple(data["input_size"]) == (3, SIZE, SIZE)
    normalized = model.input_norm(images)
    with torch.no_grad():
        assert torch.equal(vit.forward_features(normalized), model.encoder.forward_features(normalized))


def test_a_model_carries_its_build_options_to_save_pretrained(tmp_path) -> None:
    """No options passed: the model's own (create_model's) are written, the render spec among them, and the
    folder rebuilds the same model; a loaded model carries them too, so it saves again unchanged."""
    from render.spec import RenderSpec

    spec = RenderSpec(size=(SIZE, SIZE), layout=f"cell:{SIZE // 8}:top-left")
    options = {"image_size": SIZE, "grid_size": 8, "input": "image", "render_spec": spec}
    torch.manual_seed(0)
    model = create_model("cogitao:resnet", **options).eval()
    assert model.build_options == options
    save_pretrained(model, tmp_path / "own")
    config = read_model_config(tmp_path / "own")
    assert config["model_args"] == {"image_size": SIZE, "grid_size": 8, "input": "image"}
    assert RenderSpec.from_dict(config["render_spec"]) == spec
    loaded = load_pretrained(tmp_path / "own")
    images = fixed_images(2)
    assert torch.equal(loaded(images), model(images))
    save_pretrained(loaded, tmp_path / "again")
    assert read_model_config(tmp_path / "again")["model_args"] == config["model_args"]


def test_a_model_without_timm_encoder_writes_no_encoder_file(tmp_path) -> None:
    model = create_model("svib:i2i-cnn", image_size=SIZE).eval()
    out = tmp_path / "svib"
    (out).mkdir()
    (out / "encoder.safetensors").write_bytes(b"stale")  # an encoder of an earlier export (the old layout)
    save_pretrained(model, out, options={"image_size": SIZE})
    assert {path.name for path in out.iterdir()} == EXPORT_FILES - {"encoder"}
    assert read_model_config(out)["encoder"] is None
    images = fixed_images(2)
    assert torch.equal(load_pretrained(out)(images), model(images))


def test_a_hub_id_is_fetched_with_snapshot_download(exported, monkeypatch) -> None:
    import huggingface_hub

    calls = []

    def snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, sorted(kwargs["allow_patterns"]), kwargs["local_files_only"]))
        return str(exported)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("VISION_BENCH_OFFLINE", raising=False)
    images = fixed_images()
    assert torch.equal(load_pretrained("someone/grid-unet")(images), load_pretrained(exported)(images))
    assert calls == [("someone/grid-unet", ["README.md", "config.json", "model.safetensors"], False)]


def test_a_hub_id_not_in_the_cache_offline_is_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(ModelFolderError, match="neither a folder here nor a model in the Hugging Face cache") as caught:
        load_pretrained("someone/grid-unet")
    assert len(str(caught.value).splitlines()) == 1


# --- errors and re-runs -------------------------------------------------------------------------------------


def test_bad_run_dir_is_one_line(tmp_path, capsys) -> None:
    assert main(["export-model", str(tmp_path / "no-run"), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "training run directory" in error
    assert not (tmp_path / "out").exists()


def test_a_baseline_run_is_refused(tmp_path, capsys) -> None:
    config = tmp_path / "copy_input.yaml"
    config.write_text(run_config("copy_input", {}).to_yaml())
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["export-model", str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--checkpoint", "last"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "baseline without trained weights" in error


def test_a_folder_with_other_files_is_refused_and_a_rerun_repairs(trained_run, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["export-model", str(trained_run), "--out", str(out)]) == 2
    assert "notes.txt" in capsys.readouterr().err and [p.name for p in out.iterdir()] == ["notes.txt"]

    (out / "notes.txt").unlink()
    assert main(["export-model", str(trained_run), "--out", str(out), "--checkpoint", "last"]) == 0
    reference = load_pretrained(out)(fixed_images())
    # an export killed half-way: config.json gone, a weights file truncated, a temporary file left
    (out / "config.json").unlink()
    (out / "model.safetensors").write_bytes((out / "model.safetensors").read_bytes()[:100])
    (out / ".model.safetensors.tmp-1-abcd").write_bytes(b"partial")
    with pytest.raises(ModelFolderError, match=r"no config\.json"):
        load_pretrained(out)
    assert main(["export-model", str(trained_run), "--out", str(out), "--checkpoint", "last"]) == 0
    assert {p.name for p in out.iterdir()} == EXPORT_FILES
    assert torch.equal(load_pretrained(out)(fixed_images()), reference)


def test_weights_that_do_not_fit_the_config_are_named(exported, tmp_path) -> None:
    folder = tmp_path / "tampered"
    shutil.copytree(exported, folder)
    config = json.loads((folder / "config.json").read_text())
    config["model_args"]["decoder_width"] = 8
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelFolderError, match=r"does not fit unet:test_resnet .*of another shape \(decoder\."):
        load_pretrained(folder)
    (folder / "config.json").write_text('{"format": "something-else"}')
    with pytest.raises(ModelFolderError, match="not a vision-bench model config"):
        load_pretrained(folder)


# --- the model card ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated_export(trained_run, tmp_path_factory) -> tuple[Path, Path]:
    """A copy of the trained run, evaluated (RUN/evaluation/metrics.json), exported with a license."""
    run = tmp_path_factory.mktemp("evaluated") / "run"
    shutil.copytree(trained_run, run)
    assert main(["evaluate", str(run), "--offline", "--baselines", "", "--n-test", "3", "--sheet-samples", "1",
                 "--quiet"]) == 0
    out = run.parent / "model"
    assert main(["export-model", str(run), "--out", str(out), "--license", "cc-by-4.0"]) == 0
    return run, out


def card_table(text: str) -> dict[str, dict[str, str]]:
    """The card's evaluation table: split -> column -> cell."""
    lines = [line for line in text.split("## Evaluation", 1)[1].splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    return {row[0]: dict(zip(header, row)) for row in rows}


def test_the_card_metadata_parses_and_holds_the_evaluation(evaluated_export) -> None:
    from huggingface_hub import ModelCard

    from vision_bench.metrics import listed_in
    from vision_bench.metrics.registry import short_label

    run, out = evaluated_export
    metrics = json.loads((run / "evaluation" / "metrics.json").read_text())
    card = ModelCard.load(out / "README.md")
    data = card.data
    assert data.library_name == "vision-bench" and data.license == "cc-by-4.0" and data.pipeline_tag == "image-to-image"
    assert {"vision-bench", "image-to-image", "unet", "timm"} <= set(data.tags)
    assert data.model_name == "unet:test_resnet"
    # model-index: one result per split and metric, the values exactly metrics.json's
    shown = [name for name in listed_in("evaluate") if metrics["splits"]["test_id"]["metrics"].get(name) is not None]
    assert len(shown) >= 3
    results = {(r.dataset_split, r.metric_type): r for r in data.eval_results}
    assert set(results) == {(split, name) for split in ("test_id", "test_ood") for name in shown}
    for (split, name), result in results.items():
        assert result.metric_value == metrics["splits"][split]["metrics"][name]
        assert result.task_type == "image-to-image" and result.dataset_name == "envgen/G1/1"
    # the table: the same numbers to 4 significant digits, and each split's sample count
    table = card_table(card.text)
    assert set(table) == {"test_id", "test_ood"}
    for split, row in table.items():
        assert row["n"] == str(metrics["splits"][split]["n"]) == "3"
        assert {column for column in row if column not in ("split", "n")} == {short_label(name) for name in shown}
        for name in shown:
            assert row[short_label(name)] == f"{metrics['splits'][split]['metrics'][name]:.4g}"


def test_the_card_names_the_data_the_commands_and_the_config(evaluated_export) -> None:
    from vision_bench.models.model_card import command_line
    from vision_bench.train.environment import recorded_commands

    run, out = evaluated_export
    text = (out / "README.md").read_text()
    assert "the study `envgen/G1/1`, generated on the fly (n_train 8, n_val 2)" in text
    assert "32x32 pixels, palette `cogitao-rgb`" in text
    [command] = recorded_commands(run)
    assert f"```bash\n{command_line(command)}\n```" in text and "checkpoint `best.pt`" in text
    config = TrainConfig.from_yaml(run / "config.yaml").to_dict()
    assert "tracking" in config and "tracking:" not in text
    del config["tracking"]
    assert yaml.safe_dump(config, sort_keys=False).rstrip("\n") in text
    assert command_line(["/venv/bin/vision-bench", "train", "my config.yaml"]) == "vision-bench train 'my config.yaml'"


SECRETS = ("X-Amz-Signature", "s3cr3t", "hunter2", "alice", "curl", "/home/", "mlflow.internal", "token=", "abc123")


def test_the_card_publishes_no_credentials_tokens_commands_or_private_paths(tmp_path) -> None:
    from vision_bench.models.model_card import REDACTED_NOTE, TrainingRecord, model_card

    run = Path("/home/alice/runs/r1")
    config = run_config("svib:i2i-cnn", {}).to_dict()
    config["dataset"] = {"path": "https://bob:s3cr3t@data.example.com/shards/{0..3}.tar?X-Amz-Signature=abc123&x=1",
                         "n_train": 8}
    config["tracking"] = {"loggers": ["mlflow"], "mlflow": {"tracking_uri": "https://mlflow.internal/?token=abc123"}}
    config["model"]["options"] = {"weights": "/home/alice/private/weights.pt", "cache": "file:///home/alice/c/x.bin"}
    commands = [["/home/alice/.venv/bin/vision-bench", "train", "/home/alice/cfg.yaml", "--out", str(run),
                 "--set", "dataset.path=pipe:curl -s https://hunter2@x.example.com/a.tar?token=abc123"],
                ["/home/alice/.venv/bin/python", "-m", "vision_bench", "train", "--resume",
                 f"{run}/checkpoints/last.pt", "--set=dataset.path=s3://bucket/data?X-Amz-Signature=abc123"]]
    record = TrainingRecord(dataset=config["dataset"], commands=commands, config=config, checkpoint="best.pt",
                            run_dir=run, metrics={"step": 1, "data": {"path": "hf://user:s3cr3t@x/y?token=abc123"},
                                                  "splits": {"test_id": {"n": 2, "metrics": {"mse": 0.5}}}})
    text = str(model_card({"architecture": "svib:i2i-cnn", "head": "rgb", "image_size": SIZE,
                           "vision_bench_version": "0"}, record))
    assert not [secret for secret in SECRETS if secret in text], text
    assert "the dataset `https://data.example.com/shards/{0..3}.tar`" in text
    assert ("vision-bench train cfg.yaml --out r1 --set 'dataset.path=pipe:<command>'\n"
            "python -m vision_bench train --resume r1/checkpoints/last.pt --set=dataset.path=s3://bucket/data") in text
    assert "weights: weights.pt" in text and "cache: file://x.bin" in text
    assert "tracking" not in text.split("</details>")[0]
    assert REDACTED_NOTE in text
    patterns = {"train": "/home/alice/d/train-{0..3}.tar", "val_ood": "pipe:curl -s https://x/?token=abc123"}
    text = str(model_card({"architecture": "svib:i2i-cnn", "head": "rgb", "image_size": SIZE,
                           "vision_bench_version": "0"}, TrainingRecord(dataset={"path": patterns}, run_dir=run)))
    assert not [secret for secret in SECRETS if secret in text], text
    assert "the dataset `{'train': 'train-{0..3}.tar', 'val_ood': 'pipe:<command>'}`" in text


def test_an_evaluation_of_another_checkpoint_is_left_out_or_refused(evaluated_export, tmp_path, capsys) -> None:
    from huggingface_hub import ModelCard

    run, _ = evaluated_export
    metrics = json.loads((run / "evaluation" / "metrics.json").read_text())
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**metrics, "step": 7}))
    cli_error(["export-model", run, "--out", tmp_path / "out", "--metrics", other], capsys,
              "scored the checkpoint of step 7, not the exported one of step 1")
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "evaluation" / "metrics.json").write_text(json.dumps({**metrics, "step": 7}))
    assert main(["export-model", str(copy), "--out", str(tmp_path / "out")]) == 0
    assert "the model card reports no evaluation" in capsys.readouterr().out
    card = ModelCard.load(tmp_path / "out" / "README.md")
    assert card.data.eval_results is None and "## Evaluation" not in card.text and card.data.license is None
    cli_error(["export-model", run, "--out", tmp_path / "out2", "--license", "MIT License"], capsys,
              "license 'MIT License' is not a hub license id")
    assert not (tmp_path / "out2").exists()


def test_a_model_saved_from_python_gets_a_card_without_a_run(tmp_path) -> None:
    from huggingface_hub import ModelCard

    model = create_model("svib:i2i-cnn", image_size=SIZE)
    save_pretrained(model, tmp_path / "m")
    card = ModelCard.load(tmp_path / "m" / "README.md")
    assert card.data.library_name == "vision-bench" and card.data.eval_results is None
    assert "load_pretrained" in card.text and "## Training" not in card.text


def test_export_model_pushes_the_folder_it_wrote(trained_run, tmp_path, monkeypatch, capsys) -> None:
    """--push-to-hub USER/MODEL@BRANCH: the folder just written goes up, encoder/ included (huggingface_hub's HfApi
    stood in for by a recorder: no network)."""
    import huggingface_hub

    uploads = []

    class Api:
        def __init__(self, **kwargs) -> None:
            pass

        def create_repo(self, repo_id, **kwargs):
            return type("RepoUrl", (), {"repo_id": repo_id})()

        def create_branch(self, repo_id, *, branch, exist_ok):
            uploads.append(("branch", repo_id, branch))

        def upload_folder(self, *, repo_id, folder_path, revision, **kwargs):
            files = sorted(p.relative_to(folder_path).as_posix() for p in Path(folder_path).rglob("*") if p.is_file())
            uploads.append(("upload", repo_id, revision, files))
            return type("CommitInfo", (), {"commit_url": f"https://huggingface.co/{repo_id}/commit/1"})()

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("VISION_BENCH_OFFLINE", raising=False)
    out = tmp_path / "model"
    assert main(["export-model", str(trained_run), "--out", str(out), "--push-to-hub", "someone/grid-unet@v1"]) == 0
    assert "pushed" in (printed := capsys.readouterr().out)
    assert "https://huggingface.co/someone/grid-unet/commit/1" in printed
    assert uploads == [("branch", "someone/grid-unet", "v1"),
                       ("upload", "someone/grid-unet", "v1", ["README.md", "config.json", "encoder/config.json",
                                                               "encoder/model.safetensors", "model.safetensors"])]

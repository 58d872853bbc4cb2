"""`vision-bench score`: two images, two folders paired by sample key, grid metrics with a spec,
predictions saved by `evaluate --save-predictions` against the targets, and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from render import RenderSpec, render
from vision_bench.cli import main
from vision_bench.data.onthefly import OnTheFlyDataset
from vision_bench.evaluation import EvaluationData, build_baselines, evaluate_predictors, pick_device
from vision_bench.evaluation.data import training_sequences
from vision_bench.evaluation.sheets import to_uint8_image
from vision_bench.scoring import pair_files, sample_key
from vision_bench.tasks.config import TaskConfig

SPEC = RenderSpec(size=(64, 64))


def save(image: np.ndarray, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)
    return path


def grid(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 10, size=(8, 8)).astype(np.uint8)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_two_images_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    black = np.zeros((40, 40, 3), np.uint8)
    half = black.copy()
    half[:20] = 255  # half the pixels differ by 1.0 in every channel: MSE 0.5, PSNR 10*log10(2)
    code, out, _ = run(["score", str(save(half, tmp_path / "p.png")), str(save(black, tmp_path / "t.png")),
                        "--metrics", "mse,mse_sum,psnr", "--json"], capsys)
    assert code == 0
    row = json.loads(out)["pairs"][0]
    assert row["mse"] == pytest.approx(0.5) and row["mse_sum"] == pytest.approx(0.5 * 3 * 40 * 40)
    assert row["psnr"] == pytest.approx(10 * np.log10(2), abs=1e-5)


def test_offline_lpips_is_unavailable_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    image = save(render(grid(0), SPEC), tmp_path / "a.png")
    code, out, _ = run(["score", str(image), str(image)], capsys)
    assert code == 0
    assert "lpips: unavailable: LPIPS-alex needs its ImageNet backbone" in out
    row = out.splitlines()[2].split()
    assert row[-1] == "n/a" and row[3] == "100"  # identical images: PSNR capped at 100 dB, as aggregates are
    code, out, _ = run(["score", str(image), str(image), "--json"], capsys)
    result = json.loads(out)  # strict JSON: no NaN or Infinity
    assert result["pairs"][0]["lpips"] is None and result["pairs"][0]["psnr"] == 100.0


def test_folders_pair_by_sample_key_and_write_rows_and_the_mean(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for index in range(3):
        save(render(grid(index), SPEC), tmp_path / "target" / f"{index:08d}_target.png")
        save(render(grid(index), SPEC), tmp_path / "target" / f"{index:08d}_input.png")  # left out
        prediction = grid(index) if index else grid(99)
        save(render(prediction, SPEC), tmp_path / "pred" / f"{index:08d}_pred.png")
    save(render(grid(5), SPEC), tmp_path / "pred" / "00000005_pred.png")  # no partner
    for out_name in ("scores.csv", "scores.parquet"):
        code, out, _ = run(["score", str(tmp_path / "pred"), str(tmp_path / "target"), "--metrics", "mse,ssim",
                            "--out", str(tmp_path / out_name)], capsys)
        assert code == 0
    assert "mean (3 pairs)" in out and "1 images without a partner were skipped" in out
    as_text = pacsv.ConvertOptions(column_types={"key": pa.string()})
    csv = pacsv.read_csv(tmp_path / "scores.csv", convert_options=as_text).to_pydict()
    parquet = pq.read_table(tmp_path / "scores.parquet").to_pydict()
    assert csv["key"] == parquet["key"] == ["00000000", "00000001", "00000002"]
    assert csv["mse"][0] > 0 and csv["mse"][1:] == [0.0, 0.0]
    assert parquet["ssim"][1:] == [pytest.approx(1.0), pytest.approx(1.0)]


def test_grid_metrics_decode_both_images_with_the_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = grid(1)
    wrong = target.copy()
    wrong[0, 0] = (wrong[0, 0] + 1) % 10
    save(render(target, SPEC), tmp_path / "t" / "a.png")
    save(render(target, SPEC), tmp_path / "p" / "a.png")
    save(render(wrong, SPEC), tmp_path / "t" / "b.png")
    save(render(target, SPEC), tmp_path / "p" / "b.png")
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(SPEC.to_dict()))
    code, out, _ = run(["score", str(tmp_path / "p"), str(tmp_path / "t"), "--spec", str(spec_file), "--grid", "8x8",
                        "--metrics", "grid_accuracy,pixel_accuracy", "--json"], capsys)
    assert code == 0
    rows = {row["key"]: row for row in json.loads(out)["pairs"]}
    assert rows["a"]["grid_accuracy"] == 100.0 and rows["b"]["grid_accuracy"] == 0.0
    assert rows["b"]["pixel_accuracy"] == pytest.approx(100 * 63 / 64)


def test_saved_predictions_score_as_the_evaluation_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = TaskConfig.from_dict({
        "transformations": ["translate_up"], "grid_height": [10, 10], "grid_width": [10, 10], "n_objects": [1, 2],
        "samples": {"train": 8, "val_id": 2, "val_ood": 2, "test_id": 5, "test_ood": 2},
    })
    dataset = OnTheFlyDataset(config, "test_id", SPEC)
    data = EvaluationData(SPEC, {"test_id": dataset}, OnTheFlyDataset(config, "train", SPEC),
                          training_sequences(config)[0])
    device = pick_device("cpu")
    models, _ = build_baselines(("copy_input", "ground_truth"), data, device, batch_size=2)
    stale = save(render(grid(0), SPEC),
                 tmp_path / "eval" / "predictions" / "ground_truth" / "test_id" / "00000099_pred.png")
    result = evaluate_predictors(models, data, tmp_path / "eval", device=device, batch_size=2, save_predictions=True)
    for index in range(len(dataset)):
        save(to_uint8_image(dataset[index]["target"].numpy()), tmp_path / "split" / f"{index:08d}_target.png")
    for name in ("copy_input", "ground_truth"):
        folder = tmp_path / "eval" / "predictions" / name / "test_id"
        assert sorted(p.name for p in folder.iterdir()) == [f"{i:08d}_pred.png" for i in range(5)]
        assert not stale.exists()  # an earlier evaluation's image is not left beside the new ones
        code, out, _ = run(["score", str(folder), str(tmp_path / "split"), "--metrics", "mse,ssim", "--json"], capsys)
        assert code == 0
        scored = json.loads(out)["mean"]
        evaluated = result.metrics["baselines"][name]["splits"]["test_id"]["metrics"]
        assert scored["mse"] == pytest.approx(evaluated["mse"], abs=1e-7)
        assert scored["ssim"] == pytest.approx(evaluated["ssim"], abs=1e-6)


@pytest.mark.parametrize("case", ["size-mismatch", "file-and-folder", "missing", "no-pairs", "unknown-metric",
                                  "input-metric", "grid-without-spec", "bad-out", "bad-grid", "corrupt", "bad-device"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    a = save(render(grid(0), SPEC), tmp_path / "a.png")
    b = save(render(grid(1), RenderSpec(size=(32, 32))), tmp_path / "b.png")
    (tmp_path / "empty").mkdir()
    argv = {
        "size-mismatch": [str(a), str(b)],
        "file-and-folder": [str(a), str(tmp_path / "empty")],
        "missing": [str(tmp_path / "nope.png"), str(a)],
        "no-pairs": [str(tmp_path / "empty"), str(tmp_path)],
        "unknown-metric": [str(a), str(a), "--metrics", "mse,lpipz"],
        "input-metric": [str(a), str(a), "--metrics", "changed_mse"],
        "grid-without-spec": [str(a), str(a), "--metrics", "grid_accuracy"],
        "bad-out": [str(a), str(a), "--out", str(tmp_path / "x.txt")],
        "bad-grid": [str(a), str(a), "--grid", "8by8"],
        "corrupt": [str(tmp_path / "c.png"), str(a)],
        "bad-device": [str(a), str(a), "--device", "bogus"],
    }[case]
    (tmp_path / "c.png").write_bytes(b"\x89PNG broken")
    try:
        code = main(["score", *argv])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.strip().splitlines() if not line.startswith((" ", "usage:"))]  # argparse's usage
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("vision-bench score: error:")
    assert not (tmp_path / "x.txt").exists()


def test_sample_keys() -> None:
    assert sample_key(Path("00000007_pred.png")) == sample_key(Path("00000007_target.png")) == "00000007"
    assert sample_key(Path("_pred.png")) == "_pred"
    assert pair_files(Path(__file__).parent / "data" / "lpips" / "ex_p0.png",
                      Path(__file__).parent / "data" / "lpips" / "ex_ref.png")[0][0].key == "ex_p0"

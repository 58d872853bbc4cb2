"""Bad input across every command: exit 2, one line naming the problem (and the fix), no traceback,
and nothing left in the output folder. The CLI runs in-process (`main(argv)`) to keep this fast."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from vision_bench.cli import main

Case = Callable[[Path], list[str]]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def arc(path: Path, train: object) -> Path:
    return write(path, json.dumps({"train": train, "test": []}))


def image(path: Path, size: int = 40) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size)).save(path)
    return path


def task_config(tmp: Path, text: str) -> Path:
    return write(tmp / "task.yaml", text)


GOOD_TASK = "transformations: [translate_up]\ngrid_height: [8, 8]\ngrid_width: [8, 8]\nn_objects: [1, 1]\n"
SMALL = ["--n-train", "2", "--n-val", "1", "--n-test", "1"]


def export_dir(tmp: Path) -> Path:
    root = tmp / "export"
    assert main(["export", "--config", str(task_config(tmp, GOOD_TASK)), "--out", str(root), *SMALL]) == 0
    return root


def edit_manifest(tmp: Path, change: Callable[[dict], None]) -> list[str]:
    root = export_dir(tmp)
    manifest = json.loads((root / "manifest.json").read_text())
    change(manifest)
    (root / "manifest.json").write_text(json.dumps(manifest))
    return ["verify", str(root)]


def first_shard(manifest: dict) -> dict:
    return next(iter(manifest["shards"].values()))


def train_config(tmp: Path, change: Callable[[str], str] = lambda text: text) -> Path:
    text = (Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml").read_text()
    return write(tmp / "train.yaml", change(text))


CASES: dict[str, Case] = {
    # generate
    "generate-unknown-study": lambda t: ["generate", "--study", "compgen/C9/1", "--out", str(t / "out")],
    "generate-experiment-out-of-range": lambda t: ["generate", "--study", "compgen/C1/9", "--out", str(t / "out")],
    "generate-missing-config": lambda t: ["generate", "--config", str(t / "nope.yaml"), "--out", str(t / "out")],
    "generate-bad-yaml": lambda t: ["generate", "--config", str(task_config(t, "a: [1, 2\n")), "--out", str(t / "out")],
    "generate-config-not-a-mapping": lambda t: ["generate", "--config", str(task_config(t, "- 1\n- 2\n")),
                                                "--out", str(t / "out")],
    "generate-unknown-key": lambda t: ["generate", "--config", str(task_config(t, GOOD_TASK + "colour: 3\n")),
                                       "--out", str(t / "out")],
    "generate-negative-grid": lambda t: ["generate", "--config",
                                         str(task_config(t, GOOD_TASK.replace("[8, 8]", "[-3, 8]", 1))),
                                         "--out", str(t / "out")],
    "generate-unknown-transformation": lambda t: ["generate", "--config",
                                                  str(task_config(t, GOOD_TASK.replace("translate_up", "rot91"))),
                                                  "--out", str(t / "out")],
    "generate-infeasible": lambda t: ["generate", "--config",
                                      str(task_config(t, GOOD_TASK.replace("[1, 1]", "[30, 30]"))),
                                      "--out", str(t / "out"), *SMALL],
    "generate-negative-count": lambda t: ["generate", "--study", "envgen/G1/1", "--n-train", "-1",
                                          "--out", str(t / "out")],
    "generate-zero-workers": lambda t: ["generate", "--study", "envgen/G1/1", "--workers", "0", *SMALL,
                                        "--out", str(t / "out")],
    "generate-alpha-out-of-range": lambda t: ["generate", "--study", "alpha/translate_up/2", "--out", str(t / "out")],
    "generate-alpha-unknown-rule": lambda t: ["generate", "--study", "alpha/translate_upp/0.2", "--out",
                                              str(t / "out")],
    # render
    "render-missing-input": lambda t: ["render", str(t / "nope.json"), "--out", str(t / "out")],
    "render-unknown-suffix": lambda t: ["render", str(write(t / "x.txt", "hi")), "--out", str(t / "out")],
    "render-corrupt-parquet": lambda t: ["render", str(write(t / "x.parquet", "PAR1 junk")), "--out", str(t / "out")],
    "render-arc-bad-json": lambda t: ["render", str(write(t / "x.json", "{")), "--out", str(t / "out")],
    "render-arc-no-train": lambda t: ["render", str(write(t / "x.json", "{}")), "--out", str(t / "out")],
    "render-arc-color-12": lambda t: ["render", str(arc(t / "x.json", [{"input": [[12]], "output": [[1]]}])),
                                      "--out", str(t / "out")],
    "render-arc-ragged": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1, 2], [3]], "output": [[1]]}])),
                                    "--out", str(t / "out")],
    "render-arc-empty-grid": lambda t: ["render", str(arc(t / "x.json", [{"input": [], "output": [[1]]}])),
                                        "--out", str(t / "out")],
    "render-arc-pair-not-object": lambda t: ["render", str(arc(t / "x.json", [[1]])), "--out", str(t / "out")],
    "render-arc-deep": lambda t: ["render", str(write(t / "x.json", "[" * 50_000 + "]" * 50_000)),
                                  "--out", str(t / "out")],
    "render-out-not-empty": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                       "--out", str(write(t / "out" / "keep.txt", "x").parent)],
    "render-size-too-small": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                        "--size", "2", "2", "--out", str(t / "out")],
    "render-unknown-palette": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                         "--palette", "arcc", "--out", str(t / "out")],
    "render-bad-layout": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                    "--layout", "zoom", "--out", str(t / "out")],
    "render-bad-blur": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                  "--blur", "gaussian:-1", "--out", str(t / "out")],
    "render-quality-for-png": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                         "--quality", "50", "--out", str(t / "out")],
    "render-bad-background": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                        "--background", "#12", "--out", str(t / "out")],
    "render-missing-spec": lambda t: ["render", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                      "--spec", str(t / "nope.yaml"), "--out", str(t / "out")],
    "render-cogitao-strings": lambda t: ["render", str(_cogitao(t, pa.array(["[[1]]"]))), "--out", str(t / "out")],
    "render-cogitao-ints": lambda t: ["render", str(_cogitao(t, pa.array([1]))), "--out", str(t / "out")],
    "render-cogitao-missing-column": lambda t: ["render", str(_parquet(t, {"input": [[[1]]]})), "--out",
                                                str(t / "out")],
    # show
    "show-unknown-suffix": lambda t: ["show", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                      "--out", str(t / "out" / "s.gif")],
    "show-no-suffix": lambda t: ["show", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])),
                                 "--out", str(t / "out" / ".")],
    "show-zero-pairs": lambda t: ["show", str(arc(t / "x.json", [{"input": [[1]], "output": [[1]]}])), "--n", "0",
                                  "--out", str(t / "out" / "s.png")],
    "show-missing-input": lambda t: ["show", str(t / "nope.json"), "--out", str(t / "out" / "s.png")],
    # export
    "export-zero-workers": lambda t: ["export", "--study", "envgen/G1/1", *SMALL, "--workers", "0",
                                      "--out", str(t / "out")],
    "export-shard-index-out-of-range": lambda t: ["export", "--study", "envgen/G1/1", *SMALL, "--num-shards", "2",
                                                  "--shard-index", "5", "--out", str(t / "out")],
    "export-foreign-folder": lambda t: ["export", "--study", "envgen/G1/1", *SMALL,
                                        "--out", str(write(t / "out" / "notes.txt", "mine").parent)],
    "export-unknown-study": lambda t: ["export", "--study", "envgen/G9/1", "--out", str(t / "out")],
    "export-unknown-format": lambda t: ["export", "--study", "envgen/G1/1", "--format", "zip", "--out",
                                        str(t / "out")],
    # verify
    "verify-no-manifest": lambda t: ["verify", str((t / "empty").resolve())] if (t / "empty").mkdir() is None else [],
    "verify-manifest-not-json": lambda t: ["verify", str(write(t / "e" / "manifest.json", "{").parent)],
    "verify-manifest-shards-number": lambda t: edit_manifest(t, lambda m: m.update(shards=5)),
    "verify-manifest-no-sha256": lambda t: edit_manifest(
        t, lambda m: next(iter(first_shard(m)["files"].values())).pop("sha256")),
    "verify-manifest-traversal": lambda t: edit_manifest(
        t, lambda m: first_shard(m)["files"].update({"../../etc/hostname": {"size": 1, "sha256": "0" * 64}})),
    "verify-manifest-old-version": lambda t: edit_manifest(t, lambda m: m.update(format_version=0)),
    # train
    "train-missing-config": lambda t: ["train", str(t / "nope.yaml"), "--out", str(t / "out")],
    "train-unknown-model": lambda t: ["train", str(train_config(t, lambda s: s.replace("unet:test_resnet",
                                                                                      "unet:test_resnett"))),
                                      "--out", str(t / "out")],
    "train-unknown-family": lambda t: ["train", str(train_config(t, lambda s: s.replace("unet:test_resnet",
                                                                                       "unett:test_resnet"))),
                                       "--out", str(t / "out")],
    "train-negative-lr": lambda t: ["train", str(train_config(t, lambda s: s.replace("lr: 0.01", "lr: -1"))),
                                    "--out", str(t / "out")],
    "train-unknown-section": lambda t: ["train", str(train_config(t, lambda s: s + "optimiser: {lr: 1}\n")),
                                        "--out", str(t / "out")],
    "train-batch-larger-than-data": lambda t: ["train", str(train_config(t, lambda s: s.replace("batch_size: 16",
                                                                                               "batch_size: 999"))),
                                               "--out", str(t / "out")],
    "train-resume-without-run": lambda t: ["train", str(train_config(t)), "--resume", "--out", str(t / "out")],
    "train-lpips-loss-offline": lambda t: ["train", str(train_config(t, lambda s: s.replace(
        "{decoder_width: 8}", "{decoder_width: 8, loss: mse+0.1*lpips}"))), "--offline", "--out", str(t / "out")],
    "train-bad-loss": lambda t: ["train", str(train_config(t, lambda s: s.replace(
        "{decoder_width: 8}", "{decoder_width: 8, loss: mse+x*l1}"))), "--out", str(t / "out")],
    # evaluate
    "evaluate-missing-run": lambda t: ["evaluate", str(t / "nope"), "--out", str(t / "out")],
    "evaluate-missing-checkpoint": lambda t: ["evaluate", str(t), "--checkpoint", str(t / "nope.pt"),
                                              "--out", str(t / "out")],
    "evaluate-zero-batch": lambda t: ["evaluate", str(t), "--batch-size", "0", "--out", str(t / "out")],
    "evaluate-pickle-checkpoint": lambda t: ["evaluate", str(t), "--checkpoint",
                                             str(write(t / "model.pt", "not a checkpoint")), "--out", str(t / "out")],
    # bench
    "bench-missing-config": lambda t: ["bench", str(t / "nope.yaml"), "--out", str(t / "out")],
    "bench-unknown-model": lambda t: ["bench", str(write(t / "b.yaml", "experiments: [envgen/G1/1]\nmodels: "
                                                          "[unet:test_resnet, unet:test_resnetz]\n")),
                                      "--out", str(t / "out"), "--offline"],
    "bench-no-models": lambda t: ["bench", str(write(t / "b.yaml", "experiments: [envgen/G1/1]\nmodels: []\n")),
                                  "--out", str(t / "out")],
    "bench-unknown-experiment": lambda t: ["bench", str(write(t / "b.yaml", "experiments: [envgen/G7]\nmodels: "
                                                               "[unet:test_resnet]\n")), "--out", str(t / "out")],
    # score
    "score-size-mismatch": lambda t: ["score", str(image(t / "a.png", 40)), str(image(t / "b.png", 32))],
    "score-unknown-metric": lambda t: ["score", str(image(t / "a.png")), str(image(t / "b.png")), "--metrics", "msee"],
    "score-corrupt-image": lambda t: ["score", str(write(t / "a.png", "png?")), str(image(t / "b.png"))],
    "score-bad-device": lambda t: ["score", str(image(t / "a.png")), str(image(t / "b.png")), "--device", "tpu9"],
    "score-out-suffix": lambda t: ["score", str(image(t / "a.png")), str(image(t / "b.png")), "--out",
                                   str(t / "out" / "s.xlsx")],
    # compare-metrics, weights
    "compare-metrics-missing-run": lambda t: ["compare-metrics", "--out", str(t / "out"), "--run", str(t / "nope")],
    "compare-metrics-zero-n": lambda t: ["compare-metrics", "--out", str(t / "out"), "--n", "0"],
    "compare-metrics-unknown-study": lambda t: ["compare-metrics", "--out", str(t / "out"), "--study", "envgen/G8/1"],
    "weights-get-unknown-net": lambda t: ["weights", "get", "lpips", "--net", "resnet"],
}


def _parquet(tmp: Path, columns: dict) -> Path:
    path = tmp / "tasks.parquet"
    pq.write_table(pa.table(columns), path)
    return path


def _cogitao(tmp: Path, column: pa.Array) -> Path:
    return _parquet(tmp, {"input": column, "output": column, "transformation_suite": [["rot90"]], "task_key": ["a"]})


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2_and_nothing_written(case: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    argv = CASES[case](tmp_path)
    out = tmp_path / "out"
    before = sorted(p.name for p in out.iterdir()) if out.is_dir() else None
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    err = capsys.readouterr().err
    shown = [line.split("\r")[-1] for line in err.strip().split("\n")]  # what a terminal shows after a bar's \r
    lines = [line for line in shown if line.strip() and not line.startswith(("usage:", " "))]
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and ": error: " in lines[0], err
    after = sorted(p.name for p in out.iterdir()) if out.is_dir() else None
    assert after == before or (before is None and after == []), f"left in the output folder: {after}"

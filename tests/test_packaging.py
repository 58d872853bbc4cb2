"""The package as users install it: the configs ship with it and are found by README's path or by name from any
folder, the version has one source, and (slow) a built wheel carries its configs and trains and evaluates from a
folder outside the source tree."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cli_errors import cli_error

import vision_bench
from vision_bench.bench.config import BenchConfig
from vision_bench.cli import main
from vision_bench.config_files import packaged_configs, resolve_config
from vision_bench.train import TrainConfig

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "LICENSE", "README.md", "render", "vision_bench",
                "configs")


def _names(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).with_suffix("").as_posix() for path in folder.rglob("*.yaml"))


def test_the_packaged_configs_are_the_repositorys() -> None:
    configs = packaged_configs()
    assert sorted(configs) == _names(CONFIGS) and "paper/envgen_g1" in configs
    assert all(path.resolve() == (CONFIGS / f"{name}.yaml").resolve() for name, path in configs.items())


def test_readme_paths_and_names_resolve_from_any_folder(tmp_path, monkeypatch) -> None:
    """configs/X.yaml, X.yaml and X find the packaged file where nothing is at the path; a file where the command
    runs comes first; anything else, `..` included, is left as given (and then fails to read)."""
    monkeypatch.chdir(tmp_path)
    expected = (CONFIGS / "paper" / "envgen_g1.yaml").resolve()
    for given in ("configs/paper/envgen_g1.yaml", "paper/envgen_g1", "paper/envgen_g1.yaml"):
        assert resolve_config(Path(given)).resolve() == expected
    for left in ("configs/../../pyproject.toml", "paper/nope", "/nowhere/paper/envgen_g1.yaml", "configs"):
        assert resolve_config(Path(left)) == Path(left)
    (tmp_path / "train_smoke").mkdir()  # a folder of that name (a run's --out) does not hide the config
    assert resolve_config(Path("train_smoke")).resolve() == (CONFIGS / "train_smoke.yaml").resolve()
    mine = tmp_path / "configs" / "paper" / "envgen_g1.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("name: mine\n", encoding="utf-8")
    assert resolve_config(Path("configs/paper/envgen_g1.yaml")) == Path("configs/paper/envgen_g1.yaml")


def test_configs_load_by_name_as_by_path(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert TrainConfig.from_yaml("train_smoke") == TrainConfig.from_yaml(CONFIGS / "train_smoke.yaml")
    assert BenchConfig.from_yaml("configs/bench_smoke.yaml") == BenchConfig.from_yaml(CONFIGS / "bench_smoke.yaml")


def test_a_missing_config_points_to_the_list(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    cli_error(["train", "configs/nope.yaml"], capsys, "configs/nope.yaml does not exist", "`vision-bench configs`")


def test_the_configs_command_lists_and_prints_them(capsys) -> None:
    assert main(["configs"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == _names(CONFIGS)
    assert any(line.startswith("train_smoke ") and "training run small enough" in line for line in listed)
    assert main(["configs", "paper/envgen"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5
    assert main(["configs", "--print", "configs/train_smoke.yaml"]) == 0
    assert capsys.readouterr().out == (CONFIGS / "train_smoke.yaml").read_text(encoding="utf-8")
    cli_error(["configs", "--print", "train_smok"], capsys, "unknown packaged config 'train_smok'", "train_smoke")
    cli_error(["configs", "zzz"], capsys, "no packaged config starts with 'zzz'")


def test_the_version_has_one_source() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    project = pyproject.split("[project]\n", 1)[1].split("\n[", 1)[0]  # the [project] table
    assert re.search(r"^version\s*=", project, re.M) is None and 'dynamic = ["version"]' in project
    assert 'version = { attr = "vision_bench.__version__" }' in pyproject
    assert importlib.metadata.version("vision-bench") == vision_bench.__version__
    assert (REPO / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")


@pytest.mark.slow
def test_a_built_wheel_trains_and_evaluates_on_its_packaged_config_outside_the_source_tree(tmp_path) -> None:
    """Build the wheel (pip fetches the build backend from the index), install it without dependencies into a
    venv that reads this environment's packages through a path file, and from an empty folder list the configs,
    train README's `configs/train_smoke.yaml` and evaluate the run."""
    source = tmp_path / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
                   check=True, capture_output=True, timeout=600)
    wheel = next((tmp_path / "dist").glob("vision_bench-*.whl"))
    with zipfile.ZipFile(wheel) as archive:  # every config ships, whatever folder it is in
        shipped = sorted(name.removeprefix("vision_bench/configs/").removesuffix(".yaml")
                         for name in archive.namelist() if name.startswith("vision_bench/configs/"))
    assert shipped == _names(CONFIGS)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    venv_site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    check=True, capture_output=True, text=True).stdout.strip())
    (venv_site / "test_environment.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*argv: str) -> str:
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    where = run(str(python), "-c", "import vision_bench.config_files as c; print(c.__file__, c.configs_folder())")
    assert [Path(line).is_relative_to(venv_site) for line in where.split()] == [True, True]
    assert "paper/envgen_g1" in run(str(venv / "bin" / "vision-bench"), "configs")
    run(str(venv / "bin" / "vision-bench"), "train", "configs/train_smoke.yaml", "--out", "run", "--quiet",
        "--set", "training.max_steps=2", "--set", "dataset.n_val=4")
    run(str(venv / "bin" / "vision-bench"), "evaluate", "run", "--n-test", "4", "--baselines", "copy_input",
        "--quiet", "--offline")
    assert (work / "run" / "evaluation" / "metrics.json").is_file()


def test_one_connected_component_library() -> None:
    """OpenCV labels every connected component, in one function (`tasks.grid.component_labels`); scikit-image
    is not imported by the package (it is the tests' SSIM reference) and scipy labels nothing."""
    sources = [*(REPO / "vision_bench").rglob("*.py"), *(REPO / "render").rglob("*.py")]
    texts = {path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8") for path in sources}
    assert [name for name, text in texts.items() if "connectedComponents(" in text] == ["vision_bench/tasks/grid.py"]
    assert not [name for name, text in texts.items() if re.search(r"^\s*(from|import) skimage", text, re.M)]
    assert not [name for name, text in texts.items() if re.search(r"ndimage\.label\(|measure\.label\(", text)]

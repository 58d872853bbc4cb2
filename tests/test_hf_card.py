"""The `parquet` export's dataset card: Hugging Face `datasets` loads exactly the five splits, the
card is huggingface_hub's `DatasetCard` with a license and citation when given, its features are in `datasets`'
own YAML syntax, `verify` checks its split layout (a card the user edited otherwise passes) and a re-run
repairs a missing or mis-configured card and keeps an edited one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from render.spec import RenderSpec
from vision_bench.data.datasets import ParquetImageDataset
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.hf_card import CARD_NAME, CardOptions
from vision_bench.data.manifest import MANIFEST_NAME, read_manifest, write_manifest
from vision_bench.data.verify import verify_export
from vision_bench.errors import ConfigError
from vision_bench.tasks.config import SPLITS, TaskConfig

datasets = pytest.importorskip("datasets")
DatasetCard = pytest.importorskip("huggingface_hub").DatasetCard

SPEC = RenderSpec(size=(16, 16), background="random")
COUNTS = {"train": 5, "val_id": 2, "val_ood": 3, "test_id": 1, "test_ood": 2}
CONFIG = {
    "description": "Tiny card test: translate_up",
    "transformations": ["translate_up"], "depth": [1, 1],
    "grid_height": [4, 6], "grid_width": [4, 6], "n_objects": [1, 2], "seed": 5,
    "samples": COUNTS,
}
OPTIONS = ExportOptions(format="parquet", shard_size=2, masks=True)  # several files per split


@pytest.fixture(scope="module")
def config() -> TaskConfig:
    return TaskConfig.from_dict(CONFIG)


@pytest.fixture(scope="module")
def export(config: TaskConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("card") / "export"
    export_dataset(config, SPEC, root, OPTIONS)
    return root


def front_matter(root: Path) -> dict:
    text = (root / CARD_NAME).read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def file_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_load_dataset_gives_the_five_splits_with_the_exports_pixels(export: Path, tmp_path: Path) -> None:
    loaded = datasets.load_dataset(str(export), cache_dir=str(tmp_path / "cache"))
    assert list(loaded) == list(SPLITS)  # val_id and val_ood apart, test_id and test_ood apart
    assert {split: len(loaded[split]) for split in SPLITS} == COUNTS
    for split in SPLITS:
        reader = ParquetImageDataset(export, split)
        assert type(loaded[split].features["input"]).__name__ == "Image"
        assert type(loaded[split].features["target_mask"]).__name__ == "Image"
        for row in range(COUNTS[split]):
            record, item = loaded[split][row], reader[row]
            assert record["split"] == split and record["index"] == row
            assert record["input"].size == (16, 16) and record["input"].mode == "RGB"
            for column in ("input", "target"):
                pixels = np.asarray(record[column], dtype=np.float32) / 255.0
                assert np.array_equal(pixels, item[column].permute(1, 2, 0).numpy()), (split, row, column)
            assert record["input_grid"] == item["input_grid"].tolist()


def test_card_names_every_split_and_declares_the_features(export: Path) -> None:
    front = front_matter(export)
    [default] = front["configs"]
    assert default["config_name"] == "default"
    assert default["data_files"] == [{"split": s, "path": f"{s}/part-*.parquet"} for s in SPLITS]
    features = {entry["name"]: entry for entry in front["dataset_info"]["features"]}
    assert {name for name, entry in features.items() if entry.get("dtype") == "image"} == {
        "input", "target", "input_mask", "target_mask"}
    assert features["index"] == {"name": "index", "dtype": "int64"}
    assert features["input_grid"] == {"name": "input_grid", "list": {"list": "int8"}}  # not the legacy `sequence:`
    assert "sequence:" not in (export / CARD_NAME).read_text(encoding="utf-8")
    assert "| val_ood | 3 | 2 |" in (export / CARD_NAME).read_text(encoding="utf-8")
    # nothing else in the folder that the Hub would read as data
    top_level = {p.name for p in export.iterdir()}
    assert top_level == {CARD_NAME, MANIFEST_NAME, *SPLITS}


def test_the_features_are_what_datasets_itself_writes(export: Path) -> None:
    """`features_yaml` equals `datasets`' `Features._to_yaml_list()` of the Parquet schema (its image metadata
    read by `datasets` too), and reads back to the same features."""
    from vision_bench.data.hf_card import features_yaml
    from vision_bench.data.parquet_files import parquet_schema

    schema = parquet_schema(next((export / "train").glob("*.parquet")))
    features = datasets.Features.from_arrow_schema(schema)
    assert features_yaml(schema) == features._to_yaml_list()
    assert datasets.Features._from_yaml_list(features_yaml(schema)) == features


def test_card_is_recorded_and_verified(export: Path) -> None:
    manifest = read_manifest(export)
    record = manifest["documents"][CARD_NAME]
    assert record["sha256"] == hashlib.sha256((export / CARD_NAME).read_bytes()).hexdigest()
    assert "card" not in manifest  # no license or citation given
    assert verify_export(export).ok


def edited(root: Path, tmp_path: Path, edit) -> Path:
    """A copy of the export whose card `edit(text) -> text` changed."""
    copy = tmp_path / "edited"
    shutil.copytree(root, copy)
    card = copy / CARD_NAME
    card.write_text(edit(card.read_text(encoding="utf-8")), encoding="utf-8")
    return copy


def add_license(text: str) -> str:
    return text.replace("pretty_name:", "license: mit\npretty_name:", 1) + "\n## My notes\n\nRendered for our lab.\n"


def test_an_edited_card_passes_verify_and_a_rerun_keeps_it(config: TaskConfig, export: Path, tmp_path: Path) -> None:
    copy = edited(export, tmp_path, add_license)
    card = DatasetCard.load(copy / CARD_NAME)
    assert card.data.license == "mit" and "Rendered for our lab." in card.text
    assert verify_export(copy).ok and verify_export(copy, checksums=False).ok
    before = file_hashes(copy)
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == before  # the user's card, and the manifest, as they were


def test_a_card_that_mixes_the_splits_fails_verify_in_one_line(config: TaskConfig, export: Path,
                                                                tmp_path: Path, capsys) -> None:
    from vision_bench.cli import main

    val_ood = "  - split: val_ood\n    path: val_ood/part-*.parquet\n"
    merged = edited(export, tmp_path,
                    lambda text: text.replace(val_ood, "").replace("val_id/part-*.parquet", "val_*/part-*"))
    problems = [str(problem) for problem in verify_export(merged).problems]
    assert len(problems) == 1 and problems[0].startswith(f"{CARD_NAME}: its default config maps ")
    assert "val_id: val_*/part-*" in problems[0] and "val_ood: val_ood/part-*.parquet" in problems[0]
    assert main(["verify", str(merged)]) == 1
    assert f"{CARD_NAME}: its default config maps" in capsys.readouterr().err
    # the export command puts the card right again, byte for byte the export's
    export_dataset(config, SPEC, merged, OPTIONS)
    assert file_hashes(merged) == file_hashes(export) and verify_export(merged).ok
    for text, needle in (("no front matter\n", "has no default config"),
                         ("---\nconfigs: [\n---\nbroken\n", "its YAML header is unreadable")):
        (merged / CARD_NAME).write_text(text, encoding="utf-8")
        [problem] = verify_export(merged).problems
        assert needle in problem.message and len(str(problem).splitlines()) == 1
    (merged / CARD_NAME).unlink()
    assert [str(p) for p in verify_export(merged).problems] == [
        f"{CARD_NAME}: missing; re-run the export command to write it"]


def test_license_and_citation_go_into_the_card_not_the_exports_identity(
        config: TaskConfig, export: Path, tmp_path: Path, caplog) -> None:
    citation = "@misc{grids2025,\n  title = {Grid tasks as images},\n  year = {2025}\n}"
    root = tmp_path / "cited"
    export_dataset(config, SPEC, root, OPTIONS, card=CardOptions(license="cc-by-4.0", citation=citation))
    card = DatasetCard.load(root / CARD_NAME)
    assert card.data.license == "cc-by-4.0"
    assert f"## Citation\n\n```bibtex\n{citation}\n```" in card.text
    manifest = read_manifest(root)
    assert manifest["card"] == {"license": "cc-by-4.0", "citation": citation}
    assert manifest["fingerprint"] == read_manifest(export)["fingerprint"]
    data = {name: digest for name, digest in file_hashes(root).items() if name not in (CARD_NAME, MANIFEST_NAME)}
    assert data == {name: digest for name, digest in file_hashes(export).items()
                    if name not in (CARD_NAME, MANIFEST_NAME)}
    assert verify_export(root).ok
    # a lost card comes back with the recorded license and citation, from a re-run that names none
    (root / CARD_NAME).unlink()
    before = file_hashes(root)
    export_dataset(config, SPEC, root, OPTIONS)
    assert file_hashes(root).keys() == before.keys() | {CARD_NAME}
    assert DatasetCard.load(root / CARD_NAME).data.license == "cc-by-4.0"
    # a re-run naming another license keeps a card that is fine (it may hold edits), and says so
    with caplog.at_level("WARNING", logger="vision_bench.data.hf_card"):
        export_dataset(config, SPEC, root, OPTIONS, card=CardOptions(license="mit"))
    assert DatasetCard.load(root / CARD_NAME).data.license == "cc-by-4.0"
    assert "kept as it is (it may hold your edits), without the new license or citation" in caplog.text


def test_card_options_are_checked(tmp_path: Path, capsys) -> None:
    from cli_errors import cli_error

    with pytest.raises(ConfigError, match="'Apache 2' is not a hub license id"):
        CardOptions(license="Apache 2")
    cli_error(["export", "--study", "envgen/G1/1", "--out", tmp_path / "x", "--license", "MIT License"], capsys,
              "is not a hub license id")
    cli_error(["export", "--study", "envgen/G1/1", "--out", tmp_path / "y", "--license", "mit", "--format", "folder",
               "--n-train", "2", "--n-val", "1", "--n-test", "1"], capsys,
              "only the parquet format writes, not folder")
    assert not (tmp_path / "y" / MANIFEST_NAME).exists()


def test_rerun_repairs_a_lost_or_damaged_card_and_adds_one_to_an_old_export(
        config: TaskConfig, export: Path, tmp_path: Path) -> None:
    expected = file_hashes(export)
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)
    (copy / CARD_NAME).write_text("a damaged card", encoding="utf-8")
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == expected
    (copy / CARD_NAME).unlink()
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == expected
    # an export written before cards existed: no README.md, no `documents` in its manifest
    manifest = read_manifest(copy)
    del manifest["documents"]
    write_manifest(copy, manifest)
    (copy / CARD_NAME).unlink()
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == expected and verify_export(copy).ok


def test_sharded_runs_write_the_same_card_and_manifest(config: TaskConfig, export: Path, tmp_path: Path) -> None:
    for index in range(3):
        export_dataset(config, SPEC, tmp_path, OPTIONS, num_shards=3, shard_index=index)
    assert file_hashes(tmp_path) == file_hashes(export)


def test_empty_splits_are_left_out_and_other_formats_get_no_card(tmp_path: Path) -> None:
    counts = {"train": 2, "val_id": 1, "val_ood": 0, "test_id": 0, "test_ood": 1}
    config = TaskConfig.from_dict({**CONFIG, "samples": counts})
    export_dataset(config, SPEC, tmp_path / "parquet", ExportOptions(format="parquet"))
    loaded = datasets.load_dataset(str(tmp_path / "parquet"), cache_dir=str(tmp_path / "cache"))
    assert {split: len(rows) for split, rows in loaded.items()} == {"train": 2, "val_id": 1, "test_ood": 1}
    export_dataset(config, SPEC, tmp_path / "folder", ExportOptions(format="folder"))
    assert not (tmp_path / "folder" / CARD_NAME).exists()
    assert "documents" not in json.loads((tmp_path / "folder" / MANIFEST_NAME).read_text(encoding="utf-8"))

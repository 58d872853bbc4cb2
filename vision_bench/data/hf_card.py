"""The dataset card of a `parquet` export: `README.md`, so Hugging Face keeps the five splits apart.

Without a card, `datasets.load_dataset(DIR)` guesses splits from folder names and merges val_id
with val_ood into `validation` and test_id with test_ood into `test`, mixing in- and
out-of-distribution samples without a word. The card's YAML front matter (the Hub's "manual
configuration") names each split's files under `configs:` and declares every column under
`dataset_info: features:` (the image columns as `image`, lists in `datasets`' current `list:` syntax,
as `Features._to_yaml_list` writes them), so `load_dataset(DIR)` or the same folder pushed to the Hub
gives exactly train, val_id, val_ood, test_id and test_ood with decoded images.

The card is written with huggingface_hub's `DatasetCard` / `DatasetCardData` (the `hf` extra), as a pure
function of the manifest (settings, counts and the card options `license` and `citation`, kept under
`card`, outside the settings, so they do not change the export's fingerprint) and of the Parquet schema:
sharded runs write the same bytes, and the manifest records it under `documents`.

The card is the user's to edit once the export is written (a license, prose, a citation): `verify` checks
only what the data needs of it, that its `configs` keep the export's splits apart as written
(`card_problem`), and a re-run of the export keeps a card that passes that check as it is, rewriting only
a missing, unreadable or mis-configured one (with the options recorded in the manifest, or the re-run's).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from vision_bench.data.manifest import MANIFEST_NAME, digest_bytes, digest_file, shard_file_records, write_manifest
from vision_bench.data.parquet_files import parquet_schema
from vision_bench.data.parquet_images import image_feature_columns
from vision_bench.errors import ConfigError, first_line
from vision_bench.io.atomic import atomic_write_text
from vision_bench.io.extras import require
from vision_bench.tasks.config import SPLITS

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard

CARD_NAME = "README.md"
DOCUMENTS_KEY = "documents"
OPTIONS_KEY = "card"
CARD_FORMATS = ("parquet",)
DEFAULT_CONFIG = "default"
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
_DATASETS_DTYPES = {"float": "float32", "double": "float64", "halffloat": "float16"}  # arrow's name -> datasets'

logger = logging.getLogger(__name__)


def check_license(license: str | None) -> str | None:
    """A Hugging Face hub license id as a card's `license:` takes it (apache-2.0, mit, cc-by-4.0, other), or None."""
    if license is not None and not LICENSE_ID.fullmatch(license):
        raise ConfigError(f"license {license!r} is not a hub license id; give one such as apache-2.0, mit, cc-by-4.0 "
                          "or other (https://huggingface.co/docs/hub/repositories-licenses)")
    return license


@dataclass(frozen=True)
class CardOptions:
    """What a dataset card says beyond the export's settings: its hub `license` id and a `citation` (BibTeX)."""

    license: str | None = None
    citation: str | None = None

    def __post_init__(self) -> None:
        check_license(self.license)
        if self.citation is not None and not self.citation.strip():
            raise ConfigError("the citation is empty; give the BibTeX entry to cite the dataset by, or no citation")

    def check_format(self, export_format: str) -> None:
        """A one-line `ConfigError` when options are set for a format that writes no card."""
        if self.to_dict() and export_format not in CARD_FORMATS:
            raise ConfigError(f"a license and citation go into the dataset card, which only the "
                              f"{', '.join(CARD_FORMATS)} format writes, not {export_format}; leave them out or use "
                              "--format parquet")

    def to_dict(self) -> dict[str, str]:
        """The options set, as the manifest records them (none: {})."""
        return {key: value for key, value in asdict(self).items() if value is not None}

    def over(self, recorded: CardOptions) -> CardOptions:
        """These options where set, `recorded`'s elsewhere."""
        return CardOptions(**{**recorded.to_dict(), **self.to_dict()})

    @classmethod
    def of(cls, manifest: Mapping[str, Any]) -> CardOptions:
        """The options a manifest records (an export made before them records none)."""
        recorded = manifest.get(OPTIONS_KEY)
        return cls(**recorded) if isinstance(recorded, Mapping) else cls()


def hf_feature(arrow_type: pa.DataType) -> dict[str, Any]:
    """One column's type in the card's YAML, as `datasets` writes it: `{dtype: int64}`, `{list: string}`,
    `{list: {list: int8}}`, `{struct: [...]}`."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        inner = hf_feature(arrow_type.value_type)
        kind = "large_list" if pa.types.is_large_list(arrow_type) else "list"
        return {kind: inner["dtype"] if list(inner) == ["dtype"] else inner.get("struct", inner)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": field.name, **hf_feature(field.type)} for field in arrow_type]}
    return {"dtype": _DATASETS_DTYPES.get(str(arrow_type), str(arrow_type))}


def features_yaml(schema: pa.Schema) -> list[dict[str, Any]]:
    """`dataset_info.features`: every column in file order, the `Image` columns as `image`."""
    images = set(image_feature_columns(schema))
    return [{"name": field.name, **({"dtype": "image"} if field.name in images else hf_feature(field.type))}
            for field in schema]


def _split_files(manifest: Mapping[str, Any]) -> dict[str, list[str]]:
    """Split -> its Parquet files, splits in the usual order, empty splits left out."""
    files: dict[str, list[str]] = {}
    for shard, records in shard_file_records(manifest).items():
        files.setdefault(manifest["shards"][shard]["split"], []).extend(sorted(records))
    order = [s for s in SPLITS if s in files] + sorted(s for s in files if s not in SPLITS)
    return {split: files[split] for split in order if files[split]}


def split_layout(manifest: Mapping[str, Any]) -> dict[str, list[str]]:
    """Split -> the `data_files` patterns of the card's default config: one pattern per split with files."""
    return {split: [f"{split}/part-*.parquet"] for split in _split_files(manifest)}


def _size_category(total: int) -> str:
    return next((name for limit, name in _SIZE_CATEGORIES if total < limit), "n>1M")


def dataset_card(root: str | Path, manifest: Mapping[str, Any]) -> DatasetCard:
    """The card of the export at `root` described by `manifest` (its `documents` entry ignored)."""
    require("huggingface_hub", "the dataset card (README.md) of a parquet export")
    from huggingface_hub import DatasetCard, DatasetCardData

    split_files = _split_files(manifest)
    first = next((files[0] for files in split_files.values()), None)
    schema = parquet_schema(Path(root) / first) if first is not None else None
    options = CardOptions.of(manifest)
    counts = {split: int(manifest["splits"][split]["count"]) for split in split_files}
    data = DatasetCardData(
        pretty_name=_title(manifest), license=options.license, task_categories=["image-to-image"],
        tags=["synthetic", "arc", "cogitao", "compositional-generalization", "vision-bench"],
        size_categories=[_size_category(sum(counts.values()))],
        configs=[{"config_name": DEFAULT_CONFIG, "data_files": [
            {"split": split, "path": patterns[0]} for split, patterns in split_layout(manifest).items()]}],
    )
    if schema is not None:
        data["dataset_info"] = {"config_name": DEFAULT_CONFIG, "features": features_yaml(schema)}
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{_body(manifest, split_files, schema, options)}")


def _title(manifest: Mapping[str, Any]) -> str:
    description = str(manifest["settings"]["config"].get("description") or "").strip()
    name = description.split(":")[0].strip() if description else ""
    return f"vision-bench export: {name}" if name else "vision-bench export"


def _body(manifest: Mapping[str, Any], split_files: Mapping[str, list[str]], schema: pa.Schema | None,
          options: CardOptions) -> str:
    settings = manifest["settings"]
    spec = settings["render_spec"]
    description = str(settings["config"].get("description") or "a custom task config").strip()
    images = image_feature_columns(schema) if schema is not None else ["input", "target"]
    rows = "\n".join(f"| {split} | {int(manifest['splits'][split]['count'])} | {len(files)} |"
                     for split, files in split_files.items())
    height, width = spec["size"]
    citation = f"\n## Citation\n\n```bibtex\n{options.citation.strip()}\n```\n" if options.citation else ""
    return f"""# {_title(manifest)}

Symbolic grid tasks (ARC / COGITAO style) rendered as RGB image pairs by vision-bench
(`vision-bench export --format parquet`). Each row holds an input image, the target image that the
transformation sequence makes of it, and the grids and metadata both were drawn from.

- **Task config**: {description}
- **Images**: {height}x{width} pixels, {settings['options']['image_format'].upper()}, palette `{spec['palette']}`,
  background `{spec['background']}`, layout `{spec['layout']['mode']}`
- **Image columns**: {', '.join(f'`{name}`' for name in images)}; the other columns hold the grids
  (`input_grid`, `target_grid`, `frames`), the transformation `sequence`, `task_code`, `task_key`,
  `split`, `index`, `seed`, `render_seed` and per-object metadata (`objects`, JSON)

| split | samples | files |
|---|---|---|
{rows}

`val_id` / `test_id` are in distribution, `val_ood` / `test_ood` out of distribution: the card's
`configs` keeps the five splits apart.

```python
from datasets import load_dataset

data = load_dataset("path/to/this/folder")  # or the Hub id it was uploaded to
data["test_ood"][0]["input"]  # a PIL image
```

`{MANIFEST_NAME}` records the full settings and every file's SHA-256; `vision-bench verify` checks
them, and `vision-bench train` / `evaluate --data` read this folder directly. This card is yours to
edit: `verify` and a re-run of the export only need its `configs` to stay as they are.
{citation}"""


def card_text(root: str | Path, manifest: Mapping[str, Any]) -> str:
    """The text of the card `dataset_card` makes."""
    return str(dataset_card(root, manifest))


def card_problem(root: str | Path, manifest: Mapping[str, Any]) -> str | None:
    """What is wrong with the export's card for the data (None: nothing): missing, no readable YAML header, or a
    default config whose `data_files` do not name each split's files as the export wrote them (`split_layout`).
    Anything else in it (a license, prose, other configs) is the user's."""
    path = Path(root) / CARD_NAME
    fix = "fix its configs: block, or re-run the export command, which writes the card again (without your edits)"
    if not path.is_file() or path.is_symlink():
        return "missing; re-run the export command to write it"
    require("huggingface_hub", "checking the dataset card (README.md) of a parquet export")
    from huggingface_hub import DatasetCard

    try:
        data = DatasetCard.load(path).data.to_dict()
    except Exception as error:  # huggingface_hub raises ValueError for bad YAML, yaml its own errors
        return f"its YAML header is unreadable ({first_line(error)}); {fix}"
    configs = data.get("configs")
    default = next((config for config in configs if isinstance(config, Mapping)
                    and config.get("config_name", DEFAULT_CONFIG) == DEFAULT_CONFIG), None) \
        if isinstance(configs, list) else None
    expected = split_layout(manifest)
    if default is None:
        return f"its configs: block has no {DEFAULT_CONFIG} config, so `datasets` would merge val_id and val_ood; {fix}"
    found = _data_files(default.get("data_files"))
    if found != expected:
        return (f"its {DEFAULT_CONFIG} config maps {_layout_text(found)}, the export's files are "
                f"{_layout_text(expected)}; {fix}")
    return None


def _data_files(value: object) -> dict[str, list[str]]:
    """A config's `data_files` (a pattern, a list of patterns or of {split, path}, or split -> patterns) as
    split -> sorted patterns."""
    if isinstance(value, (str, list)) and not any(isinstance(entry, Mapping) for entry in _listed(value)):
        return {"train": sorted(str(entry) for entry in _listed(value))}
    entries = value.items() if isinstance(value, Mapping) else (
        (entry.get("split"), entry.get("path")) for entry in _listed(value) if isinstance(entry, Mapping))
    files: dict[str, list[str]] = {}
    for split, paths in entries:
        files.setdefault(str(split), []).extend(str(path) for path in _listed(paths))
    return {split: sorted(paths) for split, paths in files.items()}


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _layout_text(layout: Mapping[str, list[str]]) -> str:
    return ", ".join(f"{split}: {' '.join(paths)}" for split, paths in layout.items()) or "no files"


def write_card(root: str | Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Write the card of a finished export (formats that have one) and return its `documents` entry
    for the manifest: `{}` for other formats."""
    if manifest["format"] not in CARD_FORMATS:
        return {}
    text = card_text(root, manifest)
    atomic_write_text(Path(root) / CARD_NAME, text, fsync=True)
    return {DOCUMENTS_KEY: {CARD_NAME: digest_bytes(text.encode("utf-8")).to_dict()}}


def repair_card(root: str | Path, manifest: Mapping[str, Any], options: CardOptions | None = None) -> bool:
    """On a re-run of a finished export: write its card again when `card_problem` finds one (an export made
    before cards existed gains one), with the recorded options under `options`' (recorded in the manifest with
    the card); a card without a problem is kept as the user left it. True when anything was written."""
    if manifest["format"] not in CARD_FORMATS:
        return False
    root = Path(root)
    recorded = CardOptions.of(manifest)
    wanted = (options or CardOptions()).over(recorded)
    if card_problem(root, manifest) is None:
        if wanted != recorded:
            logger.warning("%s: kept as it is (it may hold your edits), without the new license or citation; "
                           "edit it, or delete it and re-run the export command to write it with them",
                           root / CARD_NAME)
        if CARD_NAME in manifest.get(DOCUMENTS_KEY, {}):
            return False
        write_manifest(root, {**manifest, DOCUMENTS_KEY: {CARD_NAME: digest_file(root / CARD_NAME).to_dict()}})
        return True
    body = {key: value for key, value in manifest.items() if key not in (DOCUMENTS_KEY, OPTIONS_KEY)}
    rewritten = {**body, **({OPTIONS_KEY: wanted.to_dict()} if wanted.to_dict() else {})}
    rewritten.update(write_card(root, rewritten))
    if rewritten != manifest:
        write_manifest(root, rewritten)
    return True


__all__ = [
    "CARD_NAME",
    "DOCUMENTS_KEY",
    "OPTIONS_KEY",
    "CardOptions",
    "card_problem",
    "card_text",
    "check_license",
    "dataset_card",
    "features_yaml",
    "repair_card",
    "split_layout",
    "write_card",
]

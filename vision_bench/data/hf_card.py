"""The dataset card of a `parquet` export: `README.md`, so Hugging Face keeps the five splits apart.

Without a card, `datasets.load_dataset(DIR)` guesses splits from folder names and merges val_id
with val_ood into `validation` and test_id with test_ood into `test`, mixing in- and
out-of-distribution samples without a word. The card's YAML front matter (the Hub's "manual
configuration") names each split's files under `configs:` and declares every column under
`dataset_info: features:` (the image columns as `image`), so `load_dataset(DIR)` or the same folder
pushed to the Hub gives exactly train, val_id, val_ood, test_id and test_ood with decoded images.

The card is a pure function of the manifest (settings and counts) and of the Parquet schema, so
sharded runs write the same bytes, and the manifest records it under `documents` for `verify`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from vision_bench.data.manifest import MANIFEST_NAME, digest_bytes, digest_file, shard_file_records, write_manifest
from vision_bench.data.parquet_files import parquet_schema
from vision_bench.data.parquet_images import image_feature_columns
from vision_bench.errors import ConfigError
from vision_bench.io.atomic import atomic_write_text
from vision_bench.tasks.config import SPLITS

CARD_NAME = "README.md"
DOCUMENTS_KEY = "documents"
CARD_FORMATS = ("parquet",)
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def check_license(license: str | None) -> str | None:
    """A Hugging Face hub license id as a card's `license:` takes it (apache-2.0, mit, cc-by-4.0, other), or None."""
    if license is not None and not LICENSE_ID.fullmatch(license):
        raise ConfigError(f"license {license!r} is not a hub license id; give one such as apache-2.0, mit, cc-by-4.0 "
                          "or other (https://huggingface.co/docs/hub/repositories-licenses)")
    return license


def hf_feature(arrow_type: pa.DataType) -> dict[str, Any]:
    """One column's type in the card's YAML: `{dtype: int64}`, `{sequence: string}`, nested lists."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        inner = hf_feature(arrow_type.value_type)
        return {"sequence": inner.get("dtype", inner)}
    return {"dtype": str(arrow_type)}


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


def _size_category(total: int) -> str:
    return next((name for limit, name in _SIZE_CATEGORIES if total < limit), "n>1M")


def _front_matter(manifest: Mapping[str, Any], split_files: Mapping[str, list[str]], schema: pa.Schema | None) -> str:
    counts = {split: int(manifest["splits"][split]["count"]) for split in split_files}
    front: dict[str, Any] = {
        "pretty_name": _title(manifest),
        "task_categories": ["image-to-image"],
        "tags": ["synthetic", "arc", "cogitao", "compositional-generalization", "vision-bench"],
        "size_categories": [_size_category(sum(counts.values()))],
        "configs": [{
            "config_name": "default",
            "data_files": [{"split": split, "path": f"{split}/part-*.parquet"} for split in split_files],
        }],
    }
    if schema is not None:
        front["dataset_info"] = {"config_name": "default", "features": features_yaml(schema)}
    return yaml.safe_dump(front, sort_keys=False, allow_unicode=False, width=100)


def _title(manifest: Mapping[str, Any]) -> str:
    description = str(manifest["settings"]["config"].get("description") or "").strip()
    name = description.split(":")[0].strip() if description else ""
    return f"vision-bench export: {name}" if name else "vision-bench export"


def _body(manifest: Mapping[str, Any], split_files: Mapping[str, list[str]], schema: pa.Schema | None) -> str:
    settings = manifest["settings"]
    spec = settings["render_spec"]
    description = str(settings["config"].get("description") or "a custom task config").strip()
    images = image_feature_columns(schema) if schema is not None else ["input", "target"]
    rows = "\n".join(f"| {split} | {int(manifest['splits'][split]['count'])} | {len(files)} |"
                     for split, files in split_files.items())
    height, width = spec["size"]
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
them, and `vision-bench train` / `evaluate --data` read this folder directly.
"""


def card_text(root: str | Path, manifest: Mapping[str, Any]) -> str:
    """The card of the export at `root` described by `manifest` (its `documents` entry ignored)."""
    split_files = _split_files(manifest)
    first = next((files[0] for files in split_files.values()), None)
    schema = parquet_schema(Path(root) / first) if first is not None else None
    return f"---\n{_front_matter(manifest, split_files, schema)}---\n\n{_body(manifest, split_files, schema)}"


def write_card(root: str | Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Write the card of a finished export (formats that have one) and return its `documents` entry
    for the manifest: `{}` for other formats."""
    if manifest["format"] not in CARD_FORMATS:
        return {}
    text = card_text(root, manifest)
    atomic_write_text(Path(root) / CARD_NAME, text, fsync=True)
    return {DOCUMENTS_KEY: {CARD_NAME: digest_bytes(text.encode("utf-8")).to_dict()}}


def repair_card(root: str | Path, manifest: Mapping[str, Any]) -> bool:
    """Rewrite a finished export's card when it is missing, damaged or unrecorded (an export made
    before cards existed gains one); True when anything was written."""
    if manifest["format"] not in CARD_FORMATS:
        return False
    root = Path(root)
    body = {key: value for key, value in manifest.items() if key != DOCUMENTS_KEY}
    expected = digest_bytes(card_text(root, body).encode("utf-8"))
    path = root / CARD_NAME
    on_disk = path.is_file() and not path.is_symlink() and digest_file(path) == expected
    recorded = manifest.get(DOCUMENTS_KEY, {}).get(CARD_NAME) == expected.to_dict()
    if on_disk and recorded:
        return False
    entry = write_card(root, body)
    if not recorded:
        write_manifest(root, {**body, **entry})
    return True


__all__ = ["CARD_NAME", "DOCUMENTS_KEY", "card_text", "check_license", "features_yaml", "repair_card", "write_card"]

"""Reading YAML configs and the command line's `--set key.path=value` overrides.

`read_yaml` turns a missing file or bad syntax into one `ConfigError` line naming the file and
applies the overrides to the parsed file before it is validated (by `StrictConfig.from_dict`), so
an override is checked exactly like the file. `check_override_keys` catches a misspelt override
key first, with the `--set` that holds it and the closest keys.

The repository's `configs/` folder ships inside the package (`vision_bench/configs` in a wheel;
setup.py maps it), so a config path that does not exist where the command runs is looked up
there (`resolve_config`): `configs/train_smoke.yaml`, as README writes it, works from an installed
wheel in any folder, and so does the short name `train_smoke` or `paper/envgen_g1`.
`packaged_configs` lists them (`vision-bench configs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from render.validation import did_you_mean, section_model
from vision_bench.errors import ConfigError

CONFIGS_DIR = "configs"
SUFFIX = ".yaml"


def configs_folder() -> Path | None:
    """The packaged configs: `vision_bench/configs` in an installed wheel, else (a source checkout, an editable
    install) the repository's `configs/` beside the package; None when neither exists."""
    package = Path(__file__).resolve().parent
    for folder in (package / CONFIGS_DIR, package.parent / CONFIGS_DIR):
        if folder.is_dir():
            return folder
    return None


def packaged_configs() -> dict[str, Path]:
    """Every packaged config by name: its path under the configs folder without `.yaml` (`paper/envgen_g1`)."""
    folder = configs_folder()
    if folder is None:
        return {}
    return {path.relative_to(folder).with_suffix("").as_posix(): path for path in sorted(folder.rglob(f"*{SUFFIX}"))}


def resolve_config(path: Path) -> Path:
    """`path` when it is a file; else the packaged config it names (`configs/NAME.yaml`, `NAME.yaml` or `NAME`,
    NAME relative to the configs folder), if there is one; else `path` (which then fails to read)."""
    if path.is_file() or path.is_absolute():
        return path
    parts = path.parts[1:] if path.parts[:1] == (CONFIGS_DIR,) else path.parts
    name = Path(*parts).as_posix() if parts else ""
    return packaged_configs().get(name.removesuffix(SUFFIX), path)


def read_yaml(path: Path, overrides: Sequence[str] = ()) -> Any:
    """The parsed YAML document at `path` (or the packaged config it names, `resolve_config`) with `overrides`
    (`key.path=value`) applied; a missing file or bad syntax raises `ConfigError` naming the file."""
    path = resolve_config(path)
    if not path.is_file():
        if path.is_dir():
            raise ConfigError(f"{path} is a folder; pass the path of a YAML file")
        raise ConfigError(f"{path} does not exist; pass the path of a YAML file or the name of a packaged config "
                          "(`vision-bench configs` lists them)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        detail = " ".join(str(error).split())  # one line: the parser's message spans several
        raise ConfigError(f"{path}: not valid YAML ({detail}); fix the syntax") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (not UTF-8); pass the path of a YAML file") from None
    return apply_overrides(data, overrides) if overrides else data


def apply_overrides(data: Any, overrides: Sequence[str]) -> Any:
    """`data` with each `key.path=value` set; the value is read as YAML (`3`, `true`, `[1, 2]`, `{a: 1}`).

    Missing intermediate mappings are created; the result is validated by the caller like a file,
    so a misspelt key is reported with close matches there.
    """
    if not isinstance(data, dict):
        return data  # the caller's validation reports "expected a mapping"
    data = _deep_copy(data)
    for override in overrides:
        path, value = parse_override(override)
        target = data
        for depth, key in enumerate(path[:-1]):
            child = target.setdefault(key, {})
            if child is None:
                child = target[key] = {}
            if not isinstance(child, dict):
                prefix = ".".join(path[: depth + 1])
                raise ConfigError(
                    f"--set {override}: {prefix} holds a value ({child!r}), not a section of keys; "
                    f"set {prefix} itself, e.g. --set {prefix}=..."
                )
            target = child
        target[path[-1]] = value
    return data


def parse_override(override: str) -> tuple[list[str], Any]:
    """`'training.epochs=3'` -> `(['training', 'epochs'], 3)`."""
    key, equals, text = override.partition("=")
    path = key.strip().split(".")
    if not equals or not all(part.strip() for part in path):
        raise ConfigError(f"--set {override!r}: expected KEY.PATH=VALUE, e.g. --set training.epochs=3")
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        raise ConfigError(
            f"--set {override!r}: the value is not valid YAML; quote it, e.g. --set 'key=\"text\"'"
        ) from None
    return [part.strip() for part in path], value


def check_override_keys(model: type[BaseModel], overrides: Sequence[str]) -> None:
    """Refuse an override whose key is not in `model` (a pydantic config class), naming the `--set`, the
    section, the closest keys and all of them; keys under a free-form mapping (such as a model's
    options) are left to whoever reads them. Sections are found as validation errors find them
    (`render.validation.section_model`), a render spec or task kept as written included."""
    for override in overrides:
        path, _ = parse_override(override)
        section: type[BaseModel] | None = model
        for depth, key in enumerate(path):
            if section is None or section.model_config.get("extra") != "forbid":
                break
            known = list(section.model_fields)
            if key not in known:
                where = ".".join(path[:depth]) or "the config"
                raise ConfigError(f"--set {override}: {where} has no key {key!r}{did_you_mean(key, known)} "
                                  f"(its keys: {', '.join(known)})")
            section = section_model(section.model_fields[key])


def _deep_copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {key: _deep_copy(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_deep_copy(value) for value in data]
    return data

"""Reading and validating YAML configs: one place for the errors every config class gives.

Each pydantic config (task, train, bench) keeps its own way of describing validation problems;
this module only turns "not a mapping", "not YAML" and "invalid" into one `ConfigError` line that
names the source.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from vision_bench.errors import ConfigError

Model = TypeVar("Model", bound=BaseModel)


def validate_mapping(
    model: type[Model], data: Any, source: str, describe: Callable[[ValidationError], str]
) -> Model:
    """`model` validated from `data`; problems raise `ConfigError("SOURCE: ...")` via `describe`."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of keys, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: {describe(error)}") from None


def read_yaml(path: Path) -> Any:
    """The parsed YAML document at `path`; a missing file or bad syntax raises `ConfigError` naming the file."""
    if not path.is_file():
        raise ConfigError(f"{path} does not exist; pass the path of a YAML file")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        detail = " ".join(str(error).split())  # one line: the parser's message spans several
        raise ConfigError(f"{path}: not valid YAML ({detail}); fix the syntax") from None

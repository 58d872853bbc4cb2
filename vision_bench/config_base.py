"""`StrictConfig`: the base of every vision_bench config and config section.

Unknown keys are errors and a validated config is frozen. `from_dict` and `from_yaml` turn every
problem into one `ConfigError` line that names the source (a file, "PATH with --set", or what
the caller says) and each bad key, as `render.validation.describe_validation_error` words it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from render.validation import describe_validation_error
from vision_bench.config_files import read_yaml, resolve_config
from vision_bench.errors import ConfigError
from vision_bench.io.documents import JSONDict

Config = TypeVar("Config", bound="StrictConfig")


class StrictConfig(BaseModel):
    """A frozen pydantic model that refuses unknown keys and reads itself from a mapping or YAML."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    config_name: ClassVar[str] = "config"
    """What error messages call a config validated from a mapping when the caller names no source."""

    @classmethod
    def from_dict(cls: type[Config], data: object, source: str | None = None) -> Config:
        """Validate a plain mapping (as read from YAML); problems raise `ConfigError("SOURCE: KEY: ...")`."""
        source = source or cls.config_name
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping of keys, got {type(data).__name__}; write the config as "
                              "`key: value` lines")
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise ConfigError(f"{source}: {describe_validation_error(error, cls, data)}") from None

    @classmethod
    def from_yaml(cls: type[Config], path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> Config:
        """The config in a YAML file (or the packaged config it names, `config_files.resolve_config`), with
        `--set key.path=value` overrides applied before validation."""
        path = resolve_config(Path(path))
        return cls.from_dict(read_yaml(path, overrides), source=f"{path} with --set" if overrides else str(path))

    def to_dict(self) -> JSONDict:
        """A plain JSON/YAML-compatible mapping that `from_dict` turns back into an equal config."""
        return self.model_dump(mode="json")

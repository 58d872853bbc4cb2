"""The type of a parsed document (a JSON file, a YAML config, a JSON record in a shard): a mapping
whose values are whatever the file holds, checked by the code that reads them."""

from __future__ import annotations

from typing import Any

JSONDict = dict[str, Any]
"""A JSON object or YAML mapping as `json.loads` / `yaml.safe_load` return it (or as it will be written)."""

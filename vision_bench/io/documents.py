"""The type of a parsed document (a JSON file, a YAML config, a JSON record in a shard): a mapping
whose values are whatever the file holds, checked by the code that reads them; `flatten` spells its
nested keys as dotted ones."""

from __future__ import annotations

from typing import Any

JSONDict = dict[str, Any]
"""A JSON object or YAML mapping as `json.loads` / `yaml.safe_load` return it (or as it will be written)."""


def flatten(data: JSONDict, prefix: str = "") -> JSONDict:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists and scalars are leaves (config comparisons, trackers' parameters)."""
    flat: JSONDict = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat

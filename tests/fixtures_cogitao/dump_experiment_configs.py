"""Dump COGITAO's released CompGen and EnvGen experiment configs to tests/data/cogitao_experiment_configs.json.

Run from the project root, with a COGITAO checkout (ktroyan/COGITAO at 8c4ca621edc9) beside it:

    python tests/fixtures_cogitao/dump_experiment_configs.py ../COGITAO

The two config files are executed with stand-ins for `arcworld.config.DatasetConfig` and
`experiment_configs.entry.ExperimentEntry` that only record their arguments, so neither COGITAO nor
its dependencies are imported. tests/test_study_presets_release.py compares every preset with the
dump.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

FILES = {"compgen": "experiment_configs/compositionality.py", "envgen": "experiment_configs/generalization.py"}
OUT = Path(__file__).resolve().parents[1] / "data" / "cogitao_experiment_configs.json"


def _recorder(**kwargs: object) -> dict[str, object]:
    return dict(kwargs)


def _load(path: Path) -> list[dict[str, object]]:
    config_module = types.ModuleType("arcworld.config")
    config_module.DatasetConfig = _recorder  # type: ignore[attr-defined]
    entry_module = types.ModuleType("experiment_configs.entry")
    entry_module.ExperimentEntry = _recorder  # type: ignore[attr-defined]
    sys.modules.update({"arcworld": types.ModuleType("arcworld"), "arcworld.config": config_module,
                        "experiment_configs": types.ModuleType("experiment_configs"),
                        "experiment_configs.entry": entry_module})
    namespace: dict[str, object] = {"__name__": "experiment_configs.dump", "__package__": "experiment_configs"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    entries = next(value for name, value in namespace.items() if name.endswith("_configs"))
    rows = []
    for entry in entries:  # type: ignore[attr-defined]
        cfg = entry["cfg"]
        rows.append({
            "setting": entry["setting"], "experiment": entry["experiment"], "split": entry["split"],
            "paired_splits": entry.get("paired_splits", False),
            "grid": [cfg["min_grid_size"], cfg["max_grid_size"]],
            "n_objects": [cfg["min_n_shapes_per_grid"], cfg["max_n_shapes_per_grid"]],
            "conditionals": cfg["shape_compulsory_conditionals"],
            "sequences": cfg["allowed_combinations"],
        })
    return rows


def main(checkout: str) -> None:
    root = Path(checkout)
    dump = {study: _load(root / relative) for study, relative in FILES.items()}
    lines = [f"{json.dumps(study)}: [\n" + ",\n".join(json.dumps(row) for row in rows) + "\n]"
             for study, rows in dump.items()]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {OUT}: " + ", ".join(f"{len(rows)} {study} entries" for study, rows in dump.items()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../COGITAO")

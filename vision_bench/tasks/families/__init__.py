"""Task families: one module per kind of task, each with its entry point `sample(config, split, index)`.

`FAMILIES` (filled by `vision_bench.tasks.families.registry`), `family_of(config)` and
`study_family(study_id)`, and the report names an entry lists (`ROLLOUTS`, `ERROR_TAXONOMY`);
`vision_bench.tasks.families.base` defines the entry (`TaskFamily`).
"""

from vision_bench.tasks.families.registry import (
    ERROR_TAXONOMY,
    FAMILIES,
    ROLLOUTS,
    TaskFamily,
    family_of,
    study_family,
)

__all__ = ["ERROR_TAXONOMY", "FAMILIES", "ROLLOUTS", "TaskFamily", "family_of", "study_family"]

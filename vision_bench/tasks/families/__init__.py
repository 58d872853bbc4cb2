"""Task families: one module per kind of task, each with its entry point `sample(config, split, index)`.

`FAMILIES` (defined in `vision_bench.tasks.families.base`, filled by each family module when
`vision_bench.tasks.families.registry` imports it), `family_of(config)`, `study_family(study_id)` and
`family_metrics()` (the metrics only some families support), and the report names an entry lists
(`ROLLOUTS`, `ERROR_TAXONOMY`); `base` also defines the entry (`TaskFamily`).
"""

from vision_bench.tasks.families.registry import (
    ERROR_TAXONOMY,
    FAMILIES,
    ROLLOUTS,
    TaskFamily,
    family_metrics,
    family_of,
    study_family,
)

__all__ = ["ERROR_TAXONOMY", "FAMILIES", "ROLLOUTS", "TaskFamily", "family_metrics", "family_of", "study_family"]

"""What `vision-bench studies --describe svib/...` prints: the rule, the scene and the combinations of each split."""

from __future__ import annotations

import textwrap

from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.scenes.factors import COLOUR_NAMES, SHAPES, SIZES, Combination
from vision_bench.tasks.scenes.placement import anchor_range, separation
from vision_bench.tasks.scenes.rules import RULES, task_name
from vision_bench.tasks.scenes.spec import OOD_SPLITS
from vision_bench.tasks.scenes.splits import combination_name, combination_splits, n_training


def describe_scene(config: TaskConfig) -> str:
    """The scene settings of an SVIB config, one item per line (combinations named colour, shape, size in cells)."""
    spec = config.scene
    if spec is None:
        raise ValueError("describe_scene needs a config whose scene is set")
    rule = RULES[spec.rule]
    splits = combination_splits(spec.split_seed)
    low, high = anchor_range(spec.grid_size, spec.motion)
    reads = ", ".join(rule.reads) or "nothing"
    writes = ", ".join(rule.writes) or "nothing"
    id_splits = ", ".join(split for split in SPLITS if split not in OOD_SPLITS)
    settings = [
        f"rule: {task_name(spec.rule)}: {RULES.description(spec.rule)} (reads {reads}; writes {writes}; "
        "both objects at once, from the input scene)",
        f"scene: two objects on a {spec.grid_size} x {spec.grid_size} grid; colours {', '.join(COLOUR_NAMES)}; shapes "
        f"{', '.join(SHAPES)}; sizes {', '.join(map(str, SIZES))} cells; motion {spec.motion} cells; top-left "
        f"corners in rows and columns {low}-{high}, at least {separation(spec.motion)} apart in rows or columns",
    ]
    lines = [
        *(line for setting in settings for line in textwrap.wrap(setting, width=100, subsequent_indent="  ")),
        f"combinations (split seed {spec.split_seed}; colour shape size):",
        *_listed(f"core ({len(splits.cores)})", splits.cores),
        *_listed(f"training at alpha {spec.alpha} ({id_splits}; the {len(splits.cores)} cores and "
                 f"{n_training(spec.alpha)} more)", splits.training(spec.alpha)),
        *_listed(f"testing ({', '.join(OOD_SPLITS)}; the same for every alpha)", splits.testing),
    ]
    return "\n".join(lines)


def _listed(title: str, combinations: tuple[Combination, ...]) -> list[str]:
    names = ", ".join(combination_name(combination) for combination in combinations)
    return [f"  {title}:", *textwrap.wrap(names, width=100, initial_indent="    ", subsequent_indent="    ")]

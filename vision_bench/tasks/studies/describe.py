"""`describe_study`: a study preset's settings, rules and sequence lists as plain text, split by split."""

from __future__ import annotations

import textwrap

from vision_bench.tasks.config import SPLITS, Rule, TaskConfig
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.selectors import selector_name
from vision_bench.tasks.studies.registry import get_study


def describe_study(study_id: str) -> str:
    """What `vision-bench studies --describe ID` prints: the description, then each group of splits that share
    one environment (grid, objects, filter) and sequence list."""
    config = get_study(study_id, n_train=1, n_val=1, n_test=1)
    lines = [study_id, *textwrap.wrap(config.description, width=100, initial_indent="  ", subsequent_indent="  ")]
    if config.episode is not None:
        from vision_bench.tasks.carc.describe import describe_episodes

        return "\n".join([*lines, describe_episodes(config)])
    if config.scene is not None:
        from vision_bench.tasks.scenes.describe import describe_scene

        return "\n".join([*lines, describe_scene(config)])
    if config.paired_ood:
        lines.append("paired: val_ood and test_ood reuse the input grids of val_id and test_id")
    for splits, split_config in _groups(config):
        lines.append(f"{', '.join(splits)}:")
        lines.extend(f"  {line}" for line in _environment(split_config))
    return "\n".join(lines)


def _groups(config: TaskConfig) -> list[tuple[list[str], TaskConfig]]:
    """Splits with identical effective configs, in split order."""
    groups: list[tuple[list[str], TaskConfig]] = []
    for split in SPLITS:
        resolved = config.for_split(split).model_copy(update={"samples": config.samples, "description": ""})
        for names, seen in groups:
            if seen == resolved:
                names.append(split)
                break
        else:
            groups.append(([split], resolved))
    return groups


def _environment(config: TaskConfig) -> list[str]:
    grid = ("square, side " if config.square_grid else "height and width each ") + _span(config.grid_height)
    if not config.square_grid and config.grid_width != config.grid_height:
        grid = f"height {_span(config.grid_height)}, width {_span(config.grid_width)}"
    objects = f"objects: {_span(config.n_objects)} per grid, each one {config.connectivity}-connected piece"
    if config.rules is not None:
        objects = (f"objects: {_span(config.n_objects)} selected by the rule and {_span(config.n_distractors)} "
                   f"distractors (not selected, left as they are) per grid, each one {config.connectivity}-connected "
                   "piece")
    lines = [f"grid: {grid}", objects]
    if len(config.object_filter) == 1:
        lines.append(f"object filter: {_filter(config.object_filter[0])}")
    else:
        lines.append(f"object filters ({len(config.object_filter)}, one drawn per object):")
        lines.extend(f"  {_filter(f)}" for f in config.object_filter)
    if config.rules is not None:
        lines.append(f"rules ({len(config.rules)}, one drawn per sample; task codes of {config.task_code_length} "
                     "tokens):")
        lines.extend(f"  {_rule(rule)}" for rule in config.rules)
        if all(rule.sequences for rule in config.rules):
            return lines
    if config.sequences is not None:
        lines.append(f"sequences ({len(config.sequences)}):")
        lines.extend(f"  {' -> '.join(sequence)}" for sequence in config.sequences)
    elif config.rules is not None and all(rule.depth for rule in config.rules):
        lines.append(f"transformations (each step drawn uniformly): {', '.join(config.transformations or ())}")
    else:
        lines.append(f"transformations (depth {_span(config.depth)}, each step drawn uniformly): "
                     f"{', '.join(config.transformations or ())}")
    return lines


def _rule(rule: Rule) -> str:
    if rule.sequences is not None:
        return f"{selector_name(rule.selector)} -> {' | '.join(' -> '.join(s) for s in rule.sequences)}"
    depth = "the config's depth" if rule.depth is None else f"depth {_span(rule.depth)}"
    return f"{selector_name(rule.selector)} -> a sequence of {depth} from the transformations below"


def _span(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return str(low) if low == high else f"{low}-{high}"


def _filter(object_filter: ObjectFilter) -> str:
    settings = object_filter.model_dump(mode="json", exclude_defaults=True)
    return ", ".join(f"{key}={value}" for key, value in settings.items()) or "any object"

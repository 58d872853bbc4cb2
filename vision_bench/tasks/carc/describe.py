"""What `vision-bench studies --describe carc/...` prints: the grammar's rules, the setup and the splits."""

from __future__ import annotations

from vision_bench.tasks.carc.canvas import PAIRS_PER_ROW, canvas_shape
from vision_bench.tasks.carc.episodes import STUDY_PLAN
from vision_bench.tasks.carc.grammar import INDICATOR_SHAPES, NEAR_DISTANCE
from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.transformations.carc import KINDS


def describe_episodes(config: TaskConfig) -> str:
    """The episode settings of a C-ARC config, one item per line."""
    spec = config.episode
    if spec is None:
        raise ValueError("describe_episodes needs a config whose episode is set")
    height, width = canvas_shape(spec.setup)
    study = ", ".join(f"{count} x {'+'.join(indicators)}" for indicators, count in STUDY_PLAN[spec.setup])
    lines = [
        f"episodes: Compositional-ARC, setup {spec.setup}, {spec.queries_per_episode} queries per episode "
        "(sample i = query i % q of episode i // q)",
        "rules (resampled per episode, composed in this order):",
        "  1. shape: objects of one random 8-connected shape (1-9 cells) -> transformation A",
        "  2. color: objects of one color -> transformation B",
        f"  3. neighbor: objects within Chebyshev distance {NEAR_DISTANCE} of the indicator object (one of "
        f"{len(INDICATOR_SHAPES)} small shapes, its own color, fixed per episode) -> transformation C",
        "  A, B, C: three different kinds of " + "; ".join(f"{kind} ({' | '.join(names)})"
                                                          for kind, names in KINDS.items()),
        f"study examples: {study}; queries: shape+color+neighbor (level 2)",
        f"canvas: {height} x {width} cells, pairs (input | output) {PAIRS_PER_ROW[spec.setup]} to a row, query last, "
        "its output slot empty in the input",
    ]
    by_side: dict[tuple, list[str]] = {}
    for split in SPLITS:
        by_side.setdefault(spec.compositions(split), []).append(split)
    for compositions, splits in by_side.items():
        side = "evaluation" if compositions == spec.eval_compositions else "training"
        names = "; ".join("+".join(c) for c in compositions)
        lines.append(f"{', '.join(splits)}: {side} level-2 compositions ({len(compositions)}): {names}")
    return "\n".join(lines)

"""The `episodes` family: Compositional-ARC episodes (paper 001; `episode` in a task config, study ids `carc/...`).

Sample `index` of a split is query `index % q` of episode `index // q` (q = `queries_per_episode`,
episodes from `vision_bench.tasks.carc.episodes`): the episode's canvas with the query's output slot
empty (input) and filled (output). Its reports add the C-ARC error taxonomy; stubbornness is not
defined, since a grammar, not one sequence, picks which objects move.
"""

from __future__ import annotations

from vision_bench.errors import ConfigError
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.carc.episodes import episode_of
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import ERROR_TAXONOMY, FAMILIES, TaskFamily
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.selectors import footprint
from vision_bench.tasks.task_code import IDENTITY_TOKEN

STUDY_PREFIX = "carc/"


def sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split`: `sequence` is the query's level-2 composition in the order applied;
    `objects` describes the query's objects on the canvas."""
    spec = config.episode
    if spec is None:
        raise ConfigError("the episodes family needs the task config's 'episode' settings")
    episode_index, query_index = divmod(index, spec.queries_per_episode)
    episode = episode_of(spec, config.seed, split, episode_index)
    query = episode.queries[query_index]
    study = [(example.input, example.output) for example in episode.study]
    grid_in = canvas.compose(spec.setup, study, query.input, None)
    grid_out = canvas.compose(spec.setup, study, query.input, query.output)
    corners = canvas.query_slots(spec.setup)
    roles = ["indicator", "query"] if len(query.objects) == 2 else ["query"]
    objects = tuple(_object_record(obj, after, corners, role)
                    for obj, after, role in zip(query.objects, query.outputs, roles))
    return TaskSample(grid_in, grid_out, episode.grammar.sequence(), (grid_in, grid_out), objects,
                      (IDENTITY_TOKEN,) * config.task_code_length, "+".join(episode.grammar.composition), config.seed,
                      split, index)


def _object_record(obj: GridObject, after: GridObject, corners: tuple[tuple[int, int], tuple[int, int]],
                   role: str) -> dict:
    """A query object on the canvas: `bbox` in the query's input slot, `output_bbox` in its output slot."""
    (in_top, in_left), (out_top, out_left) = corners
    return {
        "bbox": [obj.top + in_top, obj.left + in_left, obj.bbox[2] + in_top, obj.bbox[3] + in_left],
        "output_bbox": [after.top + out_top, after.left + out_left, after.bbox[2] + out_top, after.bbox[3] + out_left],
        "colors": obj.colors,
        "properties": {"role": role, "shape": list(footprint(obj))},
    }


def _has_episode(config: TaskConfig) -> bool:
    return config.episode is not None


def _setup(config: TaskConfig) -> str:
    """The episode canvas's setup (`3shot`, `systematicity`)."""
    if config.episode is None:
        raise ConfigError("the episodes family needs the task config's 'episode' settings")
    return config.episode.setup


FAMILIES.add("episodes", TaskFamily(sample, "C-ARC episodes", claims=_has_episode, study_prefix=STUDY_PREFIX,
                                    fields="an `episode` section",
                                    episode_setup=_setup, reports=frozenset({ERROR_TAXONOMY}),
                                    unavailable_metrics=frozenset({"stubbornness"}), rule_in_batch=False),
             "Compositional-ARC: episodes of study examples and a query on one canvas")

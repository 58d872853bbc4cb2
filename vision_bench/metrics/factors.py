"""Factor accuracy on SVIB's scenes (issue 28): each object's colour, shape, size and place, read back from the
decoded prediction and scored against the target's.

SVIB (paper 003) scores its tasks with MSE and LPIPS alone; in the grid world the factors of a predicted
object can be read from its cells (`vision_bench.tasks.scenes.factors.read_objects`), which tells what
a model got wrong. Per sample, with the prediction cut to the target grid's real size:

1. Objects. The target's objects with their factors (`scene_objects`; a target that is not a scene makes
   the sample's factor metrics NaN, never 0, with a status line saying why) and the prediction's 8-connected
   objects (`read_objects`), where a factor is None when the cells show no value of it: two objects merged
   into one blob have no shape and no size, an object of several colours has no colour.
2. Pairing, one to one: the assignment with the least total Euclidean distance between anchors, the
   top-left cells of the footprints (`scipy.optimize.linear_sum_assignment`; among equally near
   assignments the solver's, which is deterministic for objects in `read_objects`' row-major order). The
   anchor, not the centre: scenes place objects by their anchors, with room for the largest size, so a
   rule that changes an object's size keeps its anchor, and a prediction of the wrong size still starts
   where the target does.
3. Scores, over n = max(target objects, predicted objects). A pair counts as right for a factor its two
   objects share; an object without a partner counts as wrong on every factor: a target object missing
   from the prediction, and an extra predicted object too, so extra objects cost (as in Obj-PPA's union).
   - `factor_accuracy`: pairs with colour, shape and size all right, / n;
   - `factor_colour_accuracy`, `factor_shape_accuracy`, `factor_size_accuracy`: pairs with that factor
     right, / n;
   - `factor_position_accuracy`: pairs with the same anchor, / n (what the motion rules change; reported
     for every scene task).
   A blank prediction of a target without objects scores 1 (nothing to get wrong).

Aggregates are means over samples in percent, as for `object_accuracy`. The five metrics share one pass per
batch (`MetricInputs.factor_scores`). Which data they are computed for is the task family's call
(`TaskFamily.metrics`); evaluation reports them unavailable for every other family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from vision_bench.metrics.objects import cropped_pairs
from vision_bench.metrics.registry import GRIDS, MetricInputs, metric
from vision_bench.tasks.scenes.factors import FACTOR_METRICS, ReadObject, SceneObject, read_objects, scene_objects

ALL, COLOUR, SHAPE, SIZE, POSITION = FACTOR_METRICS


class NotAScene(Exception):
    """A target grid whose objects are not all SVIB scene objects; says which."""


def pair_objects(targets: Sequence[SceneObject], predicted: Sequence[ReadObject]) -> list[tuple[int, int]]:
    """(target index, predicted index) pairs, one to one, of least total anchor distance (see the module docstring)."""
    if not targets or not predicted:
        return []
    cost = np.array([[math.hypot(t.top - p.top, t.left - p.left) for p in predicted] for t in targets])
    rows, cols = linear_sum_assignment(cost)
    return list(zip(rows.tolist(), cols.tolist()))


def object_scores(prediction: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """Each factor metric's value (a fraction in [0, 1]) for one prediction of one scene; `NotAScene` when
    `target` is not a scene."""
    try:
        targets = scene_objects(target)
    except ValueError as error:
        raise NotAScene(str(error)) from None
    predicted = read_objects(prediction)
    count = max(len(targets), len(predicted))
    if count == 0:
        return dict.fromkeys(FACTOR_METRICS, 1.0)
    right = dict.fromkeys(FACTOR_METRICS, 0)
    for t, p in pair_objects(targets, predicted):
        truth, guess = targets[t], predicted[p]
        found = {COLOUR: truth.colour == guess.colour, SHAPE: truth.shape == guess.shape,
                 SIZE: truth.size == guess.size, POSITION: (truth.top, truth.left) == (guess.top, guess.left)}
        found[ALL] = found[COLOUR] and found[SHAPE] and found[SIZE]
        for name, correct in found.items():
            right[name] += correct
    return {name: right[name] / count for name in FACTOR_METRICS}


def factor_scores(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> tuple[dict[str, torch.Tensor], str | None]:
    """Metric name -> per-sample values (float64, (B,)) of a batch of decoded grids (long, padded with -1), NaN
    where the target is not a scene; and then the status that says so (else None)."""
    samples, reason = [], None
    for pred, target in cropped_pairs(pred_grids, target_grids):
        try:
            samples.append(object_scores(pred, target))
        except NotAScene as error:
            samples.append(dict.fromkeys(FACTOR_METRICS, math.nan))
            reason = reason or f"unavailable: NaN where the target is not a scene; in one, {error}"
    values = {name: torch.tensor([sample[name] for sample in samples], dtype=torch.float64, device=target_grids.device)
              for name in FACTOR_METRICS}
    return values, reason


WHAT = {
    ALL: ("colour, shape and size all right", "all three", "FactorAcc"),
    COLOUR: ("the right colour", "colour", "Fac-colour"),
    SHAPE: ("the right shape", "shape", "Fac-shape"),
    SIZE: ("the right size", "size", "Fac-size"),
    POSITION: ("the same top-left cell", "position", "Fac-pos"),
}
"""Metric -> (what its paired object must have, its title's word, its column name)."""


def _factor_metric(name: str) -> None:
    """Register `name`: per sample, the share of objects paired with a predicted object that has WHAT[name][0]."""

    def share(inputs: MetricInputs) -> torch.Tensor:
        if inputs.factor_scores is None:  # once for the five metrics
            inputs.factor_scores = factor_scores(*inputs.grid_pair())
        values, reason = inputs.factor_scores
        if reason is not None:
            inputs.status[name] = reason
        return values[name]

    needed, word, short = WHAT[name]
    metric(name, "higher",
           f"SVIB scenes: objects whose paired predicted object has {needed}, over max(target, predicted) objects "
           "(an unpaired object is wrong), percent",
           needs=GRIDS, label=f"factor accuracy: {word} (%)", short_label=short, percent=True, gap="difference",
           score_default=False)(share)


for _name in FACTOR_METRICS:
    _factor_metric(_name)

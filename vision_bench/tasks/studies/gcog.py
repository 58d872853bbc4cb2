"""gCOG's three generalisation splits (paper 004, section 3), carried into this grid world.

gCOG pairs a task operator with an object given by its features ("Exist red a") and asks a
question about a stimulus full of other objects. Here a task is a rule: a selector names an
object by its features (`all_of(color=C, shape=S)`, the analogue of "red a") and a transformation
sequence is what happens to it; every other object is a distractor and stays where it is. The
model sees the input image and, when task-conditioned, the rule's task code (the analogue of
gCOG's instruction tokens), and draws the output image.

Shared setting: 20x20 grids; objects of one colour, 8-connected, at most 3x3 cells (each of the
library's 110 such footprints in any of the 9 colours; gCOG: 26 letters x 10 colours); one target
per grid. The four object features are the `FEATURES` below; the operators are `OPERATORS`.

- `gcog/distractor/<level>` (gCOG 3.1, Fig. 3): the four rules (feature k -> operator k);
  train, val_id and test_id have 1-5 distractors, val_ood and test_ood exactly `level` (10, 20,
  30 or 40, as the paper's OOD levels; 40 objects of at most 3x3 cells is about as many as a 20x20
  grid holds apart). The training split is the same for every level.
- `gcog/systematic/depth1` (Fig. 4a): every (feature, operator) pairing but a Latin-square
  diagonal is trained; val_ood and test_ood hold the 4 held-out pairings, so each feature and
  each operator was seen, with other partners. 1-5 distractors everywhere.
- `gcog/systematic/depth3` (Fig. 4d): trees of depth 1 and 3 in training, novel depth-3 trees OOD. Here a depth-3
  task is a sequence of three steps from `PRODUCTIVE_OPERATORS`; train, val_id and test_id hold every single step
  and the 294 triples off the held-out set, val_ood and test_ood the 49 triples whose operator indices sum to 6 mod 7
  (`held_out_triple`), so every operator is trained at every position of a triple and every ordered pair of
  neighbouring steps is trained, but each held-out combination is new (gCOG's `CompTreeDatasetSubset`,
  `gcog/task/dataset_generator.py:338-384`, holds out the trees whose operators fill the condition and branch roles
  from a second operator subset). 1-5 distractors everywhere; half the rule draws are depth 1, half depth 3.
- `gcog/productive/<depth>` (Fig. 5): depth = the number of rule applications (the length of
  the transformation sequence applied to the selected object). Train, val_id and test_id have
  depths 1 and 3; val_ood and test_ood depth 5 or 7. Sequences draw each step from
  `PRODUCTIVE_OPERATORS`: the four translations, colour change and the two mirrors, which
  compose to any depth on the grid (no step can leave an object without cells; a 3x3 object
  moved 7 cells still fits a 20x20 grid). The mirrors change only the corner; on the three
  symmetric features they are steps that leave the object as it is. A sample whose steps leave
  the grid as it was (a mirror of a symmetric object, up then down) is drawn again, as every rule
  sample is, so copying the input never scores. The training split is the same for both depths.
"""

from __future__ import annotations

from functools import partial
from itertools import product

from vision_bench.tasks.config import Rule, SampleCounts, SplitConfig, SplitOverrides, TaskConfig
from vision_bench.tasks.families.rules import STUDY_PREFIX
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.selectors import SHAPES, AllOf, ColorSelector, ShapeSelector
from vision_bench.tasks.studies.builder import STUDIES

SOURCE = "gCOG (paper 004), section 3"
GRID = 20
OBJECTS = ObjectFilter(max_height=3, max_width=3, n_colors=1, connectivity=8)
FEATURES = (
    AllOf(selectors=(ColorSelector(color=2), ShapeSelector(shape=SHAPES["plus3"]))),
    AllOf(selectors=(ColorSelector(color=3), ShapeSelector(shape=SHAPES["corner_l"]))),
    AllOf(selectors=(ColorSelector(color=4), ShapeSelector(shape=SHAPES["ring3"]))),
    AllOf(selectors=(ColorSelector(color=6), ShapeSelector(shape=SHAPES["line3_h"]))),
)
"""The objects rules name, as colour and shape: red plus, green corner, yellow ring, magenta bar."""
OPERATORS = ("translate_right", "double_right", "change_shape_color", "translate_down")
"""Depth-1 operators, each visible on every feature's shape (a mirror would leave the symmetric ones unchanged)."""
PRODUCTIVE_OPERATORS = ("translate_up", "translate_down", "translate_left", "translate_right", "change_shape_color",
                        "mirror_horizontal", "mirror_vertical")
TRAIN_DISTRACTORS = (1, 5)
DISTRACTOR_LEVELS = (10, 20, 30, 40)
PRODUCTIVE_TRAIN_DEPTHS = (1, 3)
PRODUCTIVE_TEST_DEPTHS = (5, 7)
RULE_CODE_LENGTH = 4
"""all_of, colour, shape and one operator."""


def _base(description: str, counts: SampleCounts, seed: int, rules: tuple[Rule, ...],
          splits: SplitOverrides, **settings: object) -> TaskConfig:
    return TaskConfig(
        description=f"{description}. Source: {SOURCE}",
        seed=seed,
        grid_height=(GRID, GRID),
        grid_width=(GRID, GRID),
        square_grid=True,
        n_objects=(1, 1),
        object_filter=(OBJECTS,),
        connectivity=8,
        rules=rules,
        n_distractors=TRAIN_DISTRACTORS,
        samples=counts,
        splits=splits,
        **settings,
    )


def _ood(**override: object) -> SplitOverrides:
    split = SplitConfig(**override)
    return SplitOverrides(val_ood=split, test_ood=split)


def pairing_rule(feature: int, operator: int) -> Rule:
    """The rule applying `OPERATORS[operator]` to the objects of `FEATURES[feature]`."""
    return Rule(selector=FEATURES[feature], sequences=((OPERATORS[operator],),))


def build_distractor(level: int, counts: SampleCounts, seed: int) -> TaskConfig:
    rules = tuple(pairing_rule(k, k) for k in range(len(FEATURES)))
    return _base(f"gCOG distractor generalisation, {level} distractors OOD: train with 1-5 distractor objects the "
                 f"rule does not select, test with {level}", counts, seed, rules,
                 _ood(n_distractors=(level, level)), task_code_length=RULE_CODE_LENGTH)


def held_out(feature: int, operator: int) -> bool:
    """Whether the systematic split holds a pairing out of training: the Latin-square diagonal."""
    return (feature + operator) % len(OPERATORS) == len(OPERATORS) - 1


def build_systematic(counts: SampleCounts, seed: int) -> TaskConfig:
    pairs = [(f, o) for f in range(len(FEATURES)) for o in range(len(OPERATORS))]
    seen = tuple(pairing_rule(f, o) for f, o in pairs if not held_out(f, o))
    unseen = tuple(pairing_rule(f, o) for f, o in pairs if held_out(f, o))
    return _base("gCOG systematic generalisation, individual operators: (object, operator) pairings unseen in "
                 "training, each object and operator seen with other partners", counts, seed, seen,
                 _ood(rules=unseen), task_code_length=RULE_CODE_LENGTH)


def held_out_triple(sequence: tuple[str, ...]) -> bool:
    """Whether the depth-3 systematic split holds a three-step sequence out of training: its operators' indices in
    `PRODUCTIVE_OPERATORS` sum to 6 mod 7, one triple in seven (a Latin cube's diagonal)."""
    size = len(PRODUCTIVE_OPERATORS)
    return sum(PRODUCTIVE_OPERATORS.index(step) for step in sequence) % size == size - 1


def depth3_triples(held: bool) -> tuple[tuple[str, ...], ...]:
    """Every three-step sequence of `PRODUCTIVE_OPERATORS` that the split holds out (`held`) or trains."""
    return tuple(triple for triple in product(PRODUCTIVE_OPERATORS, repeat=3) if held_out_triple(triple) == held)


def build_systematic_depth3(counts: SampleCounts, seed: int) -> TaskConfig:
    singles = tuple((step,) for step in PRODUCTIVE_OPERATORS)
    seen = tuple(rule for feature in FEATURES for rule in (Rule(selector=feature, sequences=singles),
                                                           Rule(selector=feature, sequences=depth3_triples(False))))
    unseen = tuple(Rule(selector=feature, sequences=depth3_triples(True)) for feature in FEATURES)
    return _base("gCOG systematic generalisation, depth-3 trees: train on single steps and on three-step sequences, "
                 "test on three-step combinations unseen in training (each operator and each neighbouring pair "
                 "seen)", counts, seed, seen, _ood(rules=unseen), transformations=PRODUCTIVE_OPERATORS,
                 task_code_length=3 + 3)


def build_productive(depth: int, counts: SampleCounts, seed: int) -> TaskConfig:
    def rules(depths: tuple[int, ...]) -> tuple[Rule, ...]:
        return tuple(Rule(selector=feature, depth=(d, d)) for feature in FEATURES for d in depths)

    return _base(f"gCOG productive generalisation: train on depths 1 and 3, test on depth {depth} (depth = rule "
                 "applications, each step one of the translations, colour change or mirrors)", counts, seed,
                 rules(PRODUCTIVE_TRAIN_DEPTHS), _ood(rules=rules((depth,))),
                 transformations=PRODUCTIVE_OPERATORS, task_code_length=3 + max(PRODUCTIVE_TEST_DEPTHS))


def _register_studies() -> None:
    """Register gcog/distractor/<level>, gcog/systematic/depth1 and depth3, and gcog/productive/<depth>."""
    for level in DISTRACTOR_LEVELS:
        STUDIES.add(f"{STUDY_PREFIX}distractor/{level}", partial(build_distractor, level),
                    f"gCOG distractor: train 1-5 distractors, OOD {level}")
    STUDIES.add(f"{STUDY_PREFIX}systematic/depth1", build_systematic,
                "gCOG systematic: unseen (object, operator) pairings, every part seen")
    STUDIES.add(f"{STUDY_PREFIX}systematic/depth3", build_systematic_depth3,
                "gCOG systematic: unseen three-step combinations, every step and neighbouring pair seen")
    for depth in PRODUCTIVE_TEST_DEPTHS:
        STUDIES.add(f"{STUDY_PREFIX}productive/{depth}", partial(build_productive, depth),
                    f"gCOG productive: train depths 1 and 3, OOD depth {depth}")


_register_studies()

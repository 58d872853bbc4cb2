"""Study presets: appendix F sequences, EnvGen environments, alpha splits, every preset generates its splits
(sequence pools, rules with distractors, C-ARC episodes), CLI listing."""

from __future__ import annotations

from functools import partial
from itertools import permutations

import pytest

from vision_bench.cli import main
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.tasks.config import PAIRED_SPLITS, SPLITS, Rule, TaskConfig
from vision_bench.tasks.objects import ObjectProperties
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.selectors import selector_name
from vision_bench.tasks.studies import STUDIES, get_study
from vision_bench.tasks.studies.alpha import COLORS, FOOTPRINTS, SIZES, combinations, training_combinations
from vision_bench.tasks.studies.registry import MODULES

TU, R, MH = "translate_up", "rot90", "mirror_horizontal"


def sequences(config: TaskConfig, split: str) -> set[tuple[str, ...]]:
    return set(config.for_split(split).sequences)


def test_registry_holds_every_paper_experiment() -> None:
    ids = STUDIES.names()
    assert [i for i in ids if i.startswith(("compgen", "envgen"))] == [
        *(f"compgen/C{s}/{e}" for s in (1, 2, 3) for e in range(1, 6)),
        *(f"compgen-paper/C{s}/{e}" for s in (1, 2, 3) for e in range(1, 6)),
        *(f"envgen/G{s}/{e}" for s in range(1, 6) for e in range(1, 6)),
    ]
    assert "alpha/translate_up/0.4" in ids


def test_compgen_paper_variant_follows_appendix_f() -> None:
    c11 = get_study("compgen-paper/C1/1")
    assert sequences(c11, "train") == {(TU,), (R,), (MH,), (TU, MH), (MH, TU), (R, MH), (MH, R)}
    assert sequences(c11, "test_ood") == sequences(c11, "val_ood") == {(TU, R), (R, TU)}
    assert sequences(c11, "val_id") == sequences(c11, "test_id") == sequences(c11, "train")
    assert sequences(get_study("compgen-paper/C2/1"), "train") == {(TU, MH), (MH, TU), (R, MH), (MH, R)}
    c12 = get_study("compgen-paper/C1/2")
    assert sequences(c12, "test_ood") == {("change_shape_color", "pad_right")}
    assert ("pad_right", "change_shape_color") in sequences(c12, "train")
    assert sequences(get_study("compgen-paper/C2/3"), "test_ood") == {("rot90", "crop_bottom_side")}
    assert sequences(get_study("compgen-paper/C1/4"), "test_ood") == {("double_right", "crop_contours")}
    assert sequences(get_study("compgen-paper/C2/5"), "test_ood") == {("pad_left", "extend_contours_same_color")}
    c33 = get_study("compgen-paper/C3/3")
    triple = ("crop_bottom_side", "rot90", "pad_top")
    assert sequences(c33, "train") == {(t,) for t in triple} | set(permutations(triple, 2))
    assert sequences(c33, "test_ood") == set(permutations(triple, 3))
    for setting in ("C1", "C2", "C3"):
        for experiment in range(1, 6):
            config = get_study(f"compgen-paper/{setting}/{experiment}")
            assert not sequences(config, "train") & sequences(config, "test_ood")
            assert (config.grid_height, config.n_objects) == ((20, 20), (2, 2))
            assert config.object_filter[0].max_height == 6 and config.object_filter[0].connectivity == 8


def test_envgen_environments_change_between_id_and_ood() -> None:
    g1 = get_study("envgen/G1/2")
    assert g1.sequences == (("rot90",),) and g1.n_objects == (1, 2) and g1.for_split("test_ood").n_objects == (3, 4)
    g2 = get_study("envgen/G2/1")
    assert g2.grid_height == (10, 15) and g2.for_split("val_ood").grid_height == (16, 20) and not g2.square_grid
    g3 = get_study("envgen/G3/4")
    assert g3.sequences == (("crop_top_side",),)
    assert g3.for_split("test_ood").object_filter[0].min_height == 6
    g4 = get_study("envgen/G4/5").for_split("test_ood").object_filter[0]
    assert (g4.cogitao_symmetric, g4.min_colors) == (False, 2)
    g5 = get_study("envgen/G5/3")
    assert (g5.object_filter[0].cogitao_symmetric, g5.object_filter[0].n_colors) == (True, 1)
    ood = g5.for_split("test_ood")
    assert (ood.grid_height, ood.n_objects, ood.object_filter[0].min_width) == ((16, 20), (3, 4), 6)


def test_alpha_splits_are_nested_and_hold_out_the_same_combinations() -> None:
    core, held_out, rest = combinations()
    every = {(c, f, s) for c in COLORS for f in FOOTPRINTS for s in SIZES}
    assert len(every) == 48 and len(core) == 4 and len(held_out) == 9 and len(rest) == 35
    assert {c for c, _, _ in core} == set(COLORS) and {f for _, f, _ in core} == set(FOOTPRINTS)
    assert {s for _, _, s in core} == set(SIZES)
    assert set(core) | set(held_out) | set(rest) == every
    previous: set = set()
    for alpha in (0.0, 0.2, 0.4, 0.6, 1.0):
        train = set(training_combinations(alpha))
        assert len(train) == 4 + round(alpha * 35) and previous <= train and not train & set(held_out)
        previous = train
    config = get_study("alpha/translate_up/0.4")
    assert len(config.object_filter) == 18 and len(config.for_split("test_ood").object_filter) == 9
    assert get_study("alpha/pad_left/0.3").sequences == (("pad_left",),)


def test_unknown_ids_name_close_matches() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'compgen/C1/1'"):
        get_study("compgen/C1-1")
    with pytest.raises(UnknownNameError, match="alpha must be a number from 0 to 1"):
        get_study("alpha/rot90/1.5")
    with pytest.raises(UnknownNameError, match="did you mean 'rot90'"):
        get_study("alpha/rotate/0.2")
    with pytest.raises(ConfigError, match="train: must be at least 0, got -1; set it to 0 or more"):
        get_study("compgen/C1/1", n_train=-1)


def has_ood(config: TaskConfig) -> bool:
    """Whether a preset tests out of distribution: sample-efficiency is in distribution only (empty OOD splits)."""
    return config.samples.val_ood + config.samples.test_ood > 0


def rule_of(config: TaskConfig, task_key: str) -> list[Rule]:
    """The rules of `config` whose selector names the sample's task key (`SELECTOR:SEQUENCE`)."""
    return [rule for rule in config.rules or () if task_key.startswith(selector_name(rule.selector) + ":")]


def check_objects(resolved: TaskConfig, sample: TaskSample) -> None:
    """The sample's sequence and object counts are those its split allows, by rules or by the sequence pool."""
    if resolved.rules is None:
        assert sample.sequence in resolved.sequences
        assert resolved.n_objects[0] <= len(sample.objects) <= resolved.n_objects[1]
        assert resolved.n_distractors == (0, 0)
    else:
        rules = rule_of(resolved, sample.task_key)
        assert any(sample.sequence in rule.sequences if rule.sequences
                   else (rule.depth or resolved.depth)[0] <= len(sample.sequence) <= (rule.depth or resolved.depth)[1]
                   for rule in rules)
        selected = sum(meta["selected"] for meta in sample.objects)
        assert resolved.n_objects[0] <= selected <= resolved.n_objects[1]
        assert resolved.n_distractors[0] <= len(sample.objects) - selected <= resolved.n_distractors[1]
    for meta in sample.objects:
        props = ObjectProperties(**{**meta["properties"], "symmetries": tuple(meta["properties"]["symmetries"])})
        assert any(f.matches(props) and (f.colors is None or set(meta["colors"]) <= set(f.colors))
                   for f in resolved.object_filter)


def check_scene(resolved: TaskConfig, split: str, sample: TaskSample) -> None:
    """An SVIB scene: two objects of the combinations its split draws from, the rule's name as task key."""
    assert resolved.scene is not None and sample.task_key == resolved.scene.rule
    combinations = {tuple(meta["properties"]["input"][factor] for factor in ("colour", "shape", "size"))
                    for meta in sample.objects}
    assert len(sample.objects) == 2 and combinations <= set(resolved.scene.combinations(split))


def check_episode(resolved: TaskConfig, split: str, sample: TaskSample) -> None:
    """A C-ARC query: its level-2 composition is one its split draws from, its query has 1-2 objects."""
    assert resolved.episode is not None
    assert tuple(sample.task_key.split("+")) in resolved.episode.compositions(split)
    assert resolved.n_objects[0] <= len(sample.objects) <= resolved.n_objects[1]
    assert [meta["properties"]["role"] for meta in sample.objects][-1] == "query"


@pytest.mark.parametrize("study_id", STUDIES.names())
def test_every_study_generates_disjoint_splits(study_id: str) -> None:
    config = get_study(study_id, n_train=4, n_val=2, n_test=1, seed=3)
    ood = has_ood(config)
    assert ood == (not study_id.startswith("sample-efficiency"))
    assert config.count("train") == 4 and config.count("test_id") == 1
    assert (config.count("val_ood"), config.count("test_ood")) == ((2, 1) if ood else (0, 0))
    inputs: dict[bytes, str] = {}
    by_split = {split: generate_split(config, split) for split in SPLITS}
    for split, samples in by_split.items():
        resolved = config.for_split(split)
        owner = PAIRED_SPLITS.get(split, split) if config.paired_ood else split
        assert len(samples) == config.count(split)
        for sample in samples:
            assert inputs.setdefault(bytes(sample.input.shape) + sample.input.tobytes(), owner) == owner
            assert resolved.grid_height[0] <= sample.input.shape[0] <= resolved.grid_height[1]
            assert resolved.grid_width[0] <= sample.input.shape[1] <= resolved.grid_width[1]
            assert len(sample.task_code) == resolved.task_code_length
            if resolved.episode is not None:
                check_episode(resolved, split, sample)
            elif resolved.scene is not None:
                check_scene(resolved, split, sample)
            else:
                check_objects(resolved, sample)
    train_keys = {s.task_key for s in by_split["train"]}
    ood_keys = {s.task_key for s in by_split["test_ood"] + by_split["val_ood"]}
    if study_id.startswith(("compgen", "carc/", "gcog/systematic/", "gcog/productive/")):
        assert ood_keys and not train_keys & ood_keys  # OOD: sequences, compositions or pairings unseen in training
    if study_id.startswith("compgen"):
        train = {s.sequence for s in by_split["train"]}
        assert not train & {s.sequence for s in by_split["test_ood"] + by_split["val_ood"]}
    if study_id.startswith("alpha"):
        held_out = set(combinations()[1])
        for sample in by_split["test_ood"] + by_split["val_ood"]:
            for meta in sample.objects:
                footprint = next(name for name, (shape, outline) in FOOTPRINTS.items()
                                 if (shape, outline) == (meta["properties"]["footprint"],
                                                         meta["properties"]["outline"]))
                assert (meta["colors"][0], footprint, meta["properties"]["height"]) in held_out


def test_cli_lists_studies(capsys: pytest.CaptureFixture) -> None:
    assert main(["studies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(STUDIES)
    assert lines[0].split()[0] == "compgen/C1/1" and "translate_up" in lines[0]
    assert main(["studies", "envgen/G2"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [f"envgen/G2/{e}" for e in range(1, 6)]
    assert main(["studies", "nothing"]) == 2
    assert "no study id starts with 'nothing'" in capsys.readouterr().err


def registering_module(study_id: str) -> str:
    """The study module (an entry of `MODULES`) whose builder `study_id` calls."""
    builder = STUDIES[study_id]
    while isinstance(builder, partial):
        builder = builder.func
    return builder.__module__.rsplit(".", 1)[-1]


def test_study_modules_register_in_listing_order() -> None:
    families = [study_id.split("/")[0] for study_id in STUDIES]
    runs = [(family, families.count(family)) for family in dict.fromkeys(families)]
    assert runs == [("compgen", 15), ("compgen-paper", 15), ("envgen", 25), ("alpha", 20), ("sample-efficiency", 40),
                    ("experiment0", 3), ("worldmodel", 41), ("gcog", 8), ("carc", 8), ("svib", 16)]
    assert families == sorted(families, key=[name for name, _ in runs].index)
    modules = [registering_module(study_id) for study_id in STUDIES]
    assert list(dict.fromkeys(modules)) == list(MODULES)
    assert modules == sorted(modules, key=MODULES.index)
    assert STUDIES.description("envgen/G2/3").startswith("EnvGen G2-3 (")

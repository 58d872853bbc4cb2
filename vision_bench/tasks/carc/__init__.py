"""Compositional-ARC (paper 001): grammars of selector rules, episodes, and their canvas for image models.

`spec.EpisodeSpec` (the `episode` key of a task config), `grammar` (three selector rules per
episode), `episodes` (study examples and queries), `canvas` (one grid per episode) and `describe`
(what `studies --describe` prints). `vision_bench.tasks.families.episodes` makes samples of them. The
transformations are `vision_bench.tasks.transformations.carc`.
"""

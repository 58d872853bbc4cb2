"""RenderSpec: defaults, short forms, serialization round trips, effective colors and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from render import PALETTES, PaletteError, RenderSpec, SpecError, UserError
from render.palettes import background_candidates, parse_color, srgb_to_lab

BLUE, RED, GREEN, YELLOW = (0, 116, 217), (255, 65, 54), (46, 204, 64), (255, 220, 0)


def test_defaults_are_cogitao_rgb() -> None:
    spec = RenderSpec()
    assert spec.size == (128, 128)
    assert spec.layout.mode == "stretch"
    assert spec.gridlines is None and spec.blur.kind == "none" and spec.antialias == 1 and spec.jitter is None
    colors = spec.colors()
    assert colors.dtype == np.uint8 and colors.shape == (10, 3)
    assert tuple(colors[0]) == (255, 255, 255)
    assert [tuple(c) for c in colors[1:5]] == [BLUE, RED, GREEN, YELLOW]
    assert tuple(colors[9]) == (0x87, 0x0C, 0x25)


def test_named_palettes() -> None:
    assert tuple(RenderSpec(palette="arc").colors()[0]) == (0, 0, 0)
    assert PALETTES["arc"][1:] == PALETTES["cogitao-rgb"][1:]
    carc = RenderSpec(palette="c-arc").colors()
    assert [tuple(c) for c in carc[:3]] == [(0, 0, 0), (255, 0, 0), (255, 128, 0)]
    lab = srgb_to_lab(carc)
    distances = np.linalg.norm(lab[:, None] - lab[None], axis=-1)[np.triu_indices(10, 1)]
    assert distances.min() > 40


def test_explicit_palette_and_backgrounds() -> None:
    ten = [[i * 20, 255 - i * 20, 7] for i in range(10)]
    spec = RenderSpec(palette=ten, background="black")
    assert spec.palette[3] == "#3CC307"
    assert tuple(spec.colors()[0]) == (0, 0, 0)
    assert tuple(spec.colors()[1]) == (20, 235, 7)
    assert tuple(RenderSpec(background="#102030").colors()[0]) == (16, 32, 48)
    assert tuple(RenderSpec(background=(1, 2, 3)).colors()[0]) == (1, 2, 3)
    assert RenderSpec(background="White").background == "#FFFFFF"


def test_short_forms_are_stored_canonically() -> None:
    spec = RenderSpec(layout="cell:4:top-left", blur="gaussian:1.5", gridlines="#000000:2")
    assert (spec.layout.mode, spec.layout.cell_size, spec.layout.anchor) == ("cell", 4, "top-left")
    assert (spec.blur.kind, spec.blur.sigma) == ("gaussian", 1.5)
    assert (spec.gridlines.color, spec.gridlines.width) == ("#000000", 2)  # type: ignore[union-attr]
    assert RenderSpec(blur="box:3").blur.size == 3
    assert RenderSpec(gridlines=True).gridlines.width == 1  # type: ignore[union-attr]
    assert RenderSpec(gridlines="off").gridlines is None
    assert RenderSpec(layout="fit") == RenderSpec(layout={"mode": "fit"})


SPECS = st.builds(
    dict,
    size=st.tuples(st.integers(8, 1024), st.integers(8, 1024)),
    palette=st.sampled_from(["cogitao-rgb", "arc", "c-arc"]),
    background=st.sampled_from(["palette", "random", "#123456", "black"]),
    layout=st.sampled_from(["stretch", "fit", "cell:3", "cell:5:bottom-right"]),
    gridlines=st.sampled_from([None, True, "#FF00FF:2"]),
    blur=st.sampled_from(["none", "gaussian:0.7", "box:5"]),
    antialias=st.integers(1, 8),
    jitter=st.sampled_from([None, {"max_shift": 3, "scale": [0.8, 1.25]}]),
)


@settings(max_examples=40, deadline=None)
@given(SPECS)
def test_dict_and_yaml_round_trips(fields: dict) -> None:
    spec = RenderSpec(**fields)
    assert RenderSpec.from_dict(spec.to_dict()) == spec
    assert RenderSpec.from_yaml(spec.to_yaml()) == spec
    assert hash(RenderSpec.from_dict(spec.to_dict())) == hash(spec)


def test_from_yaml_reads_a_file(tmp_path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("size: [64, 96]\nlayout: fit\nblur: gaussian:1\n")
    spec = RenderSpec.from_yaml(path)
    assert spec.size == (64, 96) and spec.layout.mode == "fit" and spec.blur.sigma == 1.0
    path.write_text("size: [64, 96\n")
    with pytest.raises(SpecError, match="spec.yaml: not valid YAML"):
        RenderSpec.from_yaml(path)
    path.write_text("sise: [64, 96]\n")
    with pytest.raises(SpecError, match="spec.yaml: render spec: sise: unknown key; did you mean 'size'\\? "
                                        "\\(known keys: size, palette"):
        RenderSpec.from_yaml(path)


def test_spec_is_frozen() -> None:
    spec = RenderSpec()
    with pytest.raises(ValidationError, match="frozen"):
        spec.size = (64, 64)  # type: ignore[misc]


def test_random_background_is_seeded_and_far_from_objects() -> None:
    spec = RenderSpec(background="random")
    backgrounds = np.array([spec.colors(seed)[0] for seed in range(200)])
    assert np.array_equal(backgrounds[7], spec.colors(7)[0])
    assert len({tuple(b) for b in backgrounds}) > 50
    objects = srgb_to_lab(spec.colors(0)[1:])
    lab = srgb_to_lab(backgrounds)
    nearest = np.linalg.norm(lab[:, None] - objects[None], axis=-1).min(axis=1)
    pairwise = np.linalg.norm(objects[:, None] - objects[None], axis=-1)[np.triu_indices(9, 1)]
    assert nearest.min() >= pairwise.min() - 1e-9
    assert np.array_equal(spec.colors_batch([3, 7, 3])[2], spec.colors(3))
    assert len(background_candidates(PALETTES["cogitao-rgb"][1:])) > 1000


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"size": (4, 128)}, SpecError, "size: each side must be 8..1024 pixels, got \\[4, 128\\]"),
        ({"size": (128, 2000)}, SpecError, "8..1024"),
        ({"palette": "acr"}, PaletteError, "unknown palette 'acr'; did you mean 'arc'"),
        ({"palette": ["#000000"] * 9}, PaletteError, "exactly ten colors"),
        ({"palette": ["#000000"] * 10}, PaletteError, "colors 0 and 1 are both #000000"),
        ({"background": "#12345"}, PaletteError, "background '#12345' is not a color"),
        ({"background": (256, 0, 0)}, PaletteError, "not a color"),
        ({"background": "#AAAAAA"}, SpecError, "equals object color 5"),
        ({"layout": "grid"}, SpecError, "layout.mode"),
        ({"layout": "cell"}, SpecError, "needs cell_size"),
        ({"layout": "fit:4"}, SpecError, "cell_size applies to layout 'cell' only"),
        ({"layout": "cell:4:middle"}, SpecError, "unknown anchor 'middle'"),
        ({"blur": "gaussian"}, SpecError, "gaussian blur needs sigma"),
        ({"blur": "gaussian:x"}, SpecError, "sigma 'x' is not a float"),
        ({"blur": "box:4"}, SpecError, "odd size"),
        ({"gridlines": {"width": 0}}, SpecError, "gridline width must be 1..16"),
        ({"gridlines": {"color": "teal"}}, PaletteError, "gridline color 'teal' is not a color"),
        ({"antialias": 9}, SpecError, "supersampling factor 1..8"),
        ({"jitter": {"scale": [1.5, 1.0]}}, SpecError, "jitter scale"),
        ({"colour": "red"}, SpecError, "colour: unknown key.* \\(known keys: size, palette, background, layout, "),
        ({"blur": {"kind": "box", "radius": 2}}, SpecError,
         "^render spec: blur.radius: unknown key \\(known keys: kind, sigma, size\\)$"),
        ({"antialias": "x"}, SpecError, "^render spec: antialias: Input should be a valid integer.*, got 'x'$"),
        ({"layout": "grid", "palette": "acr"}, PaletteError,
         "palette: unknown palette 'acr'.*; layout.mode: .*, got 'grid'$"),
    ],
)
def test_bad_fields_raise_one_clear_user_error(fields: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        RenderSpec(**fields)
    assert isinstance(raised.value, UserError)
    assert "render spec" in str(raised.value)


def test_bad_seed_and_bad_from_dict_input() -> None:
    with pytest.raises(SpecError, match="seed must be an integer"):
        RenderSpec(background="random").colors(-1)
    with pytest.raises(SpecError, match="mapping of fields"):
        RenderSpec.from_dict([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "rgb"),
    [("#0074D9", BLUE), ("#0074d9", BLUE), ("white", (255, 255, 255)), ([1, 2, 3], (1, 2, 3))],
)
def test_parse_color(text: object, rgb: tuple) -> None:
    assert parse_color(text) == rgb


def test_lab_of_reference_colors() -> None:
    lab = srgb_to_lab(np.array([[255, 255, 255], [0, 0, 0], [255, 0, 0]]))
    assert np.allclose(lab[0], [100, 0, 0], atol=0.01)
    assert np.allclose(lab[1], [0, 0, 0], atol=0.01)
    assert np.allclose(lab[2], [53.24, 80.09, 67.20], atol=0.05)

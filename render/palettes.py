"""Named palettes, color parsing, CIE Lab conversion and the seeded random background.

A palette is ten sRGB colors: index 0 is the background, 1-9 the object colors. Colors are
compared in CIE Lab (D65) because equal Lab distances look roughly equally different, which is
what decoding a blurred or compressed image and choosing a background both need.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from render.errors import UserError

RGB = tuple[int, int, int]


class PaletteError(UserError):
    """An unknown palette name or a malformed color."""


PALETTES: dict[str, tuple[str, ...]] = {
    # COGITAO-RGB: the ARC viewer colors on a white background.
    "cogitao-rgb": (
        "#FFFFFF", "#0074D9", "#FF4136", "#2ECC40", "#FFDC00",
        "#AAAAAA", "#F012BE", "#FF851B", "#7FDBFF", "#870C25",
    ),
    # The ARC viewer: the same object colors on black.
    "arc": (
        "#000000", "#0074D9", "#FF4136", "#2ECC40", "#FFDC00",
        "#AAAAAA", "#F012BE", "#FF851B", "#7FDBFF", "#870C25",
    ),
    # Compositional-ARC names its colors only (black, red, orange, yellow, green, blue, purple,
    # pink, cyan, gray); these saturated values keep every pair at least 40 Lab units apart.
    "c-arc": (
        "#000000", "#FF0000", "#FF8000", "#FFFF00", "#00C000",
        "#0000FF", "#800080", "#FF80C0", "#00FFFF", "#808080",
    ),
}

NAMED_COLORS: dict[str, RGB] = {"white": (255, 255, 255), "black": (0, 0, 0)}

_COLOR_FORMS = "'#RRGGBB', 'white', 'black' or three integers 0-255 such as [255, 128, 0]"


def parse_color(value: object, what: str = "color") -> RGB:
    """Read '#RRGGBB', 'white', 'black' or an (r, g, b) triple of integers 0-255."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in NAMED_COLORS:
            return NAMED_COLORS[text]
        digits = text[1:] if text.startswith("#") else ""
        if len(digits) == 6 and all(c in "0123456789abcdef" for c in digits):
            return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    elif isinstance(value, (Sequence, np.ndarray)) and len(value) == 3:
        channels = list(value)
        if all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in channels) and all(
            0 <= int(c) <= 255 for c in channels
        ):
            return (int(channels[0]), int(channels[1]), int(channels[2]))
    raise PaletteError(f"{what} {value!r} is not a color; write {_COLOR_FORMS}")


def to_hex(rgb: Sequence[int]) -> str:
    """'#RRGGBB' for an (r, g, b) triple."""
    return "#{:02X}{:02X}{:02X}".format(*(int(c) for c in rgb))


def resolve_palette(palette: object) -> tuple[str, ...]:
    """Ten '#RRGGBB' colors for a palette name or an explicit list of ten distinct colors."""
    if isinstance(palette, str):
        if palette in PALETTES:
            return PALETTES[palette]
        close = difflib.get_close_matches(palette, list(PALETTES), n=2, cutoff=0.4)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise PaletteError(
            f"unknown palette {palette!r}{hint} (known: {', '.join(PALETTES)}; or give ten colors)"
        )
    if not isinstance(palette, (Sequence, np.ndarray)) or len(palette) != 10:
        count = len(palette) if isinstance(palette, (Sequence, np.ndarray)) else "no"
        raise PaletteError(
            f"a palette is a name ({', '.join(PALETTES)}) or a list of exactly ten colors "
            f"(index 0 = background), got {count} colors"
        )
    colors = tuple(to_hex(parse_color(c, f"palette color {i}")) for i, c in enumerate(palette))
    for i, color in enumerate(colors):
        if color in colors[:i]:
            raise PaletteError(
                f"palette colors {colors.index(color)} and {i} are both {color}; the ten colors "
                "must differ so that images can be decoded back to grids"
            )
    return colors


def palette_array(colors: Sequence[str]) -> np.ndarray:
    """(len(colors), 3) uint8 array of '#RRGGBB' strings (a fresh, writable copy)."""
    return _parsed(tuple(colors)).copy()


@lru_cache(maxsize=256)
def _parsed(colors: tuple[str, ...]) -> np.ndarray:
    return np.array([parse_color(c) for c in colors], dtype=np.uint8)


_D65_WHITE = np.array([0.95047, 1.0, 1.08883])
_RGB_TO_XYZ = np.array(
    [
        [0.4124564, 0.3575761, 0.1804375],
        [0.2126729, 0.7151522, 0.0721750],
        [0.0193339, 0.1191920, 0.9503041],
    ]
)


def srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """CIE Lab (D65) of sRGB values 0-255 in the last axis; float64, same leading shape."""
    linear = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(linear <= 0.04045, linear / 12.92, ((linear + 0.055) / 1.055) ** 2.4)
    xyz = linear @ _RGB_TO_XYZ.T / _D65_WHITE
    delta = 6 / 29
    f = np.where(xyz > delta**3, np.cbrt(xyz), xyz / (3 * delta**2) + 4 / 29)
    return np.stack(
        [116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1
    )


def _min_lab_distance(colors: np.ndarray, references: np.ndarray) -> np.ndarray:
    """For each color, the Lab distance to the nearest reference color."""
    lab, ref = srgb_to_lab(colors), srgb_to_lab(references)
    return np.linalg.norm(lab[:, None, :] - ref[None, :, :], axis=-1).min(axis=1)


@lru_cache(maxsize=32)
def background_candidates(object_colors: tuple[str, ...]) -> np.ndarray:
    """Colors a random background may take: (K, 3) uint8, far from every object color.

    Candidates are the 16^3 sRGB lattice (steps of 17); a candidate qualifies when its Lab distance
    to the nearest object color is at least the smallest distance between two object colors, so the
    background is as distinguishable as the palette's own colors (34 Lab units for cogitao-rgb).
    """
    objects = palette_array(object_colors)
    levels = np.arange(0, 256, 17, dtype=np.uint8)
    lattice = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
    distance = _min_lab_distance(lattice, objects)
    lab = srgb_to_lab(objects)
    pairwise = np.linalg.norm(lab[:, None] - lab[None], axis=-1)
    threshold = min(pairwise[np.triu_indices(len(objects), 1)].min(), distance.max())
    chosen = lattice[distance >= threshold]
    chosen.setflags(write=False)
    return chosen

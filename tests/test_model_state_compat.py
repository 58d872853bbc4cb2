"""Checkpoints stay loadable: a tiny model of each family, saved before a refactoring, loads after it
with the same parameter names and gives the same output.

tests/data/model_state_compat/ holds, per case, `<case>.json` (the state dict's names, shapes and
dtypes) and `<case>.safetensors` (the buffers and the model's output on a fixed input).
The parameters are not stored (SVIB's decoder alone is 19 MB): each is regenerated from its name
and shape by `parameter_values`, so the case is a checkpoint whose weights are a function of its
keys, and the input is regenerated from a seed (`case_inputs`). A renamed, reshaped or missing
parameter fails the strict load; a changed computation fails the output comparison.
`python tests/test_model_state_compat.py [CASE ...]` rewrites the files (of the cases named, else of all): do
that only on purpose, for a new case or when a change of names or outputs is intended (old checkpoints will no
longer load). svib_cell_oracle was svib_oracle before svib:oracle became SVIB's factor Oracle and the cell-token
model was renamed svib:cell-oracle (names, buffers and output unchanged). cogitao_resnet_film and
cogitao_vanilla_tf_image were rewritten when the cogitao family became COGITAO's released models (biased
convolutions, the MLP head, dropout, task tokens after the cells): checkpoints of the earlier family do not load.
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from render.spec import RenderSpec
from render.torch_backend import render_grids
from vision_bench.models import MODELS, create_model
from vision_bench.tasks.scenes.factors import SceneObject, draw

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DATA = Path(__file__).parent / "data" / "model_state_compat"
PALETTE = np.array(
    [
        [255, 255, 255], [0, 116, 217], [255, 65, 54], [46, 204, 64], [255, 220, 0],
        [170, 170, 170], [240, 18, 190], [255, 133, 27], [127, 219, 255], [135, 12, 37],
    ],
    dtype=np.uint8,
)
COGITAO_SPEC = RenderSpec(size=(16, 16), layout="cell:4:top-left")
"""The cogitao cases' render spec: 4x4 grid cells of 4 pixels, which their image input reads and `predict` draws."""
CARC_SPEC = RenderSpec(size=(44, 44), palette="c-arc")
"""The carc case's render spec, with which `predict` draws its predicted 3-Shot canvas."""
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "unet_film": ("unet:test_resnet", {"image_size": 32, "decoder_width": 4, "task_conditioning": True}),
    "unet_palette": ("unet:test_resnet", {"image_size": 32, "decoder_width": 4, "head": "palette",
                                          "palette_colors": PALETTE}),
    "bottleneck_film": ("bottleneck:test_resnet", {"image_size": 32, "decoder_width": 4, "latent_dim": 8,
                                                   "task_conditioning": True}),
    "vit_linear_tokens": ("vit:test_vit", {"image_size": 32, "task_conditioning": True}),
    "vit_transformer": ("vit:test_vit", {"image_size": 32, "decoder": "transformer", "decoder_depth": 1}),
    "svib_i2i_cnn": ("svib:i2i-cnn", {"image_size": 16, "task_conditioning": True}),
    "svib_i2i_vit": ("svib:i2i-vit", {"image_size": 16}),
    "svib_oracle": ("svib:oracle", {"image_size": 16}),
    "svib_cell_oracle": ("svib:cell-oracle", {"image_size": 16, "grid_size": 4}),
    "svib_ssm_vae": ("svib:ssm-vae", {"image_size": 16, "encoder_width": 4, "encoder_depth": 1, "latent_dim": 8,
                                      "decoder_width": 8, "decoder_depth": 1}),
    "svib_ssm_slot": ("svib:ssm-slot", {"image_size": 16, "encoder_width": 4, "encoder_depth": 1, "latent_dim": 8,
                                        "decoder_width": 8, "decoder_depth": 1}),
    "cogitao_resnet_film": ("cogitao:resnet", {"image_size": 16, "grid_size": 4, "task_conditioning": True,
                                               "render_spec": COGITAO_SPEC}),
    "cogitao_vanilla_tf_image": ("cogitao:vanilla-tf", {"image_size": 16, "input": "image",
                                                         "render_spec": COGITAO_SPEC}),
    "gcog_crossattn": ("gcog:crossattn", {"image_size": 16, "grid_size": 4, "task_conditioning": True,
                                          "render_spec": COGITAO_SPEC}),
    "gcog_gru_image": ("gcog:gru", {"image_size": 16, "input": "image", "render_spec": COGITAO_SPEC}),
    "carc_mlc": ("carc:mlc", {"image_size": 44, "study_examples": 3, "render_spec": CARC_SPEC}),
    "mean_target": ("mean_target", {"image_size": 16}),
}
"""Case -> (model name, create_model options): every family with a state, at tiny sizes."""


def parameter_values(name: str, shape: tuple[int, ...]) -> torch.Tensor:
    """Deterministic values for the parameter `name`: uniform in +-1/sqrt(fan-in), seeded by the name."""
    generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return (torch.rand(shape, generator=generator) * 2 - 1) / fan_in**0.5


def case_inputs(name: str, image_size: int) -> dict[str, torch.Tensor]:
    """The fixed batch a case is run on: two images (or grids for the svib oracles) and task codes."""
    generator = torch.Generator().manual_seed(7)
    batch = {
        "input": torch.rand(2, 3, image_size, image_size, generator=generator),
        "task_code": torch.randint(0, 29, (2, 4), generator=generator),
    }
    if name == "svib:cell-oracle":
        grids = torch.randint(0, 10, (2, 4, 4), generator=generator)
        grids[1, 3:, :] = -1  # the second grid is 3x4: padding is masked out
        batch["input_grid"] = grids
    if name.startswith(("cogitao:", "gcog:")):  # grids of 4x4 and 3x4 cells, drawn for image input
        grids = torch.randint(0, 10, (2, 4, 4), generator=generator)
        grids[1, 3:, :] = -1
        batch["input_grid"] = grids
        batch["grid_shape"] = torch.tensor([[4, 4], [3, 4]])
        batch["input"] = render_grids(grids, COGITAO_SPEC)
    if name == "carc:mlc":  # two 3-Shot episode canvases of random colours
        batch["input_grid"] = torch.randint(0, 10, (2, 21, 44), generator=generator)
        batch["grid_shape"] = torch.tensor([[21, 44], [21, 44]])
    if name == "svib:oracle":  # scenes of two objects and of one (padded, masked out)
        scenes = [[SceneObject(1, 3, 2, 1, 2), SceneObject(2, 0, 1, 9, 10)], [SceneObject(3, 1, 0, 5, 6)]]
        batch["input_grid"] = torch.stack([torch.from_numpy(draw(scene, 16)).long() for scene in scenes])
        batch["grid_shape"] = torch.full((2, 2), 16)
    return batch


def load_case(case: str, model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Load the stored case into `model` strictly (regenerated parameters, stored buffers); the stored tensors."""
    names = json.loads((DATA / f"{case}.json").read_text())
    stored = load_file(DATA / f"{case}.safetensors")
    state = {}
    for key, entry in names["state"].items():
        if entry["parameter"]:
            state[key] = parameter_values(key, tuple(entry["shape"]))
        else:
            state[key] = stored[f"buffer/{key}"]
    model.load_state_dict(state, strict=True)
    return stored


def write_cases(cases: list[str]) -> None:
    """Build each case from its seeded initialisation, fill its parameters, save names, buffers and output."""
    DATA.mkdir(parents=True, exist_ok=True)
    for case in cases:
        name, options = CASES[case]
        torch.manual_seed(0)
        model = create_model(name, **options).eval()
        parameters = dict(model.named_parameters())
        with torch.no_grad():
            for key, parameter in parameters.items():
                parameter.copy_(parameter_values(key, tuple(parameter.shape)))
        state = model.state_dict()
        if name == "mean_target":
            state["mean_image"].copy_(torch.rand(state["mean_image"].shape, generator=torch.Generator().manual_seed(3)))
            state["samples_seen"].fill_(5)
        entries = {
            key: {"shape": list(value.shape), "dtype": str(value.dtype), "parameter": key in parameters}
            for key, value in state.items()
        }
        batch = case_inputs(name, options["image_size"])
        tensors = {f"buffer/{key}": value.contiguous() for key, value in state.items() if key not in parameters}
        tensors["output"] = model.predict(batch).contiguous()
        (DATA / f"{case}.json").write_text(json.dumps({"model": name, "state": entries}) + "\n")
        save_file(tensors, DATA / f"{case}.safetensors")


@pytest.mark.parametrize("case", list(CASES))
def test_a_checkpoint_from_before_loads_with_identical_outputs(case: str) -> None:
    name, options = CASES[case]
    model = create_model(name, **options).eval()
    stored = load_case(case, model)
    state = model.state_dict()
    recorded = json.loads((DATA / f"{case}.json").read_text())["state"]
    assert {key: list(value.shape) for key, value in state.items()} == {
        key: entry["shape"] for key, entry in recorded.items()
    }
    batch = case_inputs(name, options["image_size"])
    torch.testing.assert_close(model.predict(batch), stored["output"], rtol=1e-5, atol=1e-6)


def test_every_trainable_family_has_a_case() -> None:
    """A new trainable family needs a case here."""
    covered = {name.split(":")[0] for name, _ in CASES.values()}
    assert {family for family in MODELS if MODELS[family].trainable} <= covered


def test_a_renamed_parameter_fails_the_load() -> None:
    """The check can fail: the unet case's state under one changed name is refused."""
    model = create_model("unet:test_resnet", **CASES["unet_film"][1]).eval()
    load_case("unet_film", model)
    state = model.state_dict()
    state["decoder.exit.weight"] = state.pop("decoder.output.weight")
    with pytest.raises(RuntimeError, match="decoder.output.weight"):
        create_model("unet:test_resnet", **CASES["unet_film"][1]).load_state_dict(state, strict=True)


if __name__ == "__main__":
    write_cases(sys.argv[1:] or list(CASES))

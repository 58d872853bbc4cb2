"""cogitao:grid-tf and cogitao:pl-tf compute what COGITAO's released Grid-TF and PL-TF compute.

tests/data/cogitao_grid_tf_differential.npz holds, from COGITAO's own code (ktroyan/visualreasoning; made by
tests/fixtures_cogitao/make_grid_tf_fixture.py from a checkout, not needed here): its visual-token canvases and
object ids of fixed grids, the logits of its `VisionTransformer` at the Grid-TF command, and for its
`LoopedVisionTransformer` at the PL-TF command every step's logits, halting probabilities and halting distribution
of the training unroll, its PonderNet loss, and its sampled halting at inference under a fixed seed, with seeded
weights. Each test re-creates the released weights from their names, shapes and seed and loads them into the
project's model through `RENAMES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_cogitao.make_model_fixture import fixture_weights
from torch import nn

from vision_bench.models import create_model
from vision_bench.models.cogitao import grid_tf
from vision_bench.models.cogitao.pl_tf import generator_draws
from vision_bench.models.cogitao.visual_tokens import VT_CLASSES, object_ids, visual_token_canvas

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "data" / "cogitao_grid_tf_differential.npz"
TOLERANCE = 1e-5  # logits of order 1-10; the implementations differ by float32 summation order only
TASK_VOCAB = 36  # the release's task table: 15 classes + 21 task ids (identity 15)
MODELS = {"gridtf": "cogitao:grid-tf", "pltf": "cogitao:pl-tf"}
Rename = tuple[str, str | Callable[[re.Match[str]], str]]
LAYER: list[Rename] = [
    (r"\.first_norm\.", ".attention_norm."),
    (r"\.attn\.qkv_proj\.", ".attention.qkv."),
    (r"\.attn\.proj\.", ".attention.out."),
    (r"\.second_norm\.", ".ffn_norm."),
    (r"\.ff\.fc1\.", ".ffn.0."),
    (r"\.ff\.fc2\.", ".ffn.3."),
]
RENAMES: dict[str, list[Rename]] = {
    "gridtf": [
        (r"^encoder\.reg_tokens$", "encoder.registers"),
        (r"^encoder\.patch_embed\.patch_proj\.", "encoder.stem."),
        (r"^encoder\.ape\.(input|position)_weight$", r"encoder.mixer.\1_weight"),
        (r"^encoder\.transformer_layers\.", "encoder.layers."),
        *LAYER,
        (r"^encoder\.last_layer_norm\.", "encoder.norm."),
        (r"^decoder\.", "classifier."),
        (r"^embed_task_tokens_seq\.", "encoder.task_tokens."),
    ],
    "pltf": [
        (r"^encoder\.patch_embed\.patch_proj\.", "body.stem."),
        (r"^encoder\.transformer_layers\.0\.", "body.block."),
        *LAYER,
        (r"^encoder\.last_layer_norm\.", "body.norm."),
        (r"^encoder\.halting_mlp\.", "body.halting."),
        (r"^decoder\.", "body.classifier."),
        (r"^embed_task_tokens_seq\.", "body.task_tokens."),
    ],
}
"""Released name -> the project's, per model (regular-expression substitutions applied in order)."""
UNREAD = {"gridtf": {"encoder.ape.position_scale"}, "pltf": set()}
"""Released tensors without a project counterpart: the mixer's `position_scale`, which `weighted_sum_vec` never
reads."""


def project_name(kind: str, name: str) -> str:
    for pattern, replacement in RENAMES[kind]:
        name = re.sub(pattern, replacement, name)
    return name


def fixture() -> np.lib.npyio.NpzFile:
    return np.load(FIXTURE, allow_pickle=False)


def tensor(key: str) -> torch.Tensor:
    return torch.from_numpy(fixture()[key])


def released_state(kind: str) -> dict[str, torch.Tensor]:
    return fixture_weights(fixture(), kind, "make_grid_tf_fixture.py")


def project_model(kind: str) -> nn.Module:
    """The project's model at the fixture's grid size with the released weights; its first layer reads the 15 class
    channels of the released one-hot's 37 (Grid-TF: + 21 task ids + 1 for the registers) or 36 (PL-TF), the others
    never hot on a canvas."""
    model = create_model(MODELS[kind], grid_size=int(fixture()["grid_size"]), task_conditioning=TASK_VOCAB)
    state = {project_name(kind, name): value for name, value in released_state(kind).items()
             if name not in UNREAD[kind]}
    stem = "encoder.stem.weight" if kind == "gridtf" else "body.stem.weight"
    state[stem] = state[stem][:, :VT_CLASSES]
    model.load_state_dict(state, strict=True)
    return model.eval()


def gridtf_logits(model: nn.Module) -> torch.Tensor:
    """(B, cells row-major, classes), as COGITAO lays its logits out."""
    with torch.no_grad():
        return model(tensor("vt_inputs"), tensor("task_tokens")).flatten(2).transpose(1, 2)


def test_the_visual_token_canvases_are_the_releases() -> None:
    """Inputs and targets (one of another size than its input) on the canvas of side 5 + 2, and 48 grids of up to 10
    a side on 12."""
    size = int(fixture()["grid_size"])
    assert torch.equal(visual_token_canvas(tensor("grids"), size, "input", ""), tensor("vt_inputs"))
    assert torch.equal(visual_token_canvas(tensor("targets"), size, "target", ""), tensor("vt_targets"))
    grids = tensor("ids_grids").long()
    assert torch.equal(visual_token_canvas(grids, 10, "input", ""), tensor("ids_canvases").long())


def test_the_object_ids_are_the_releases() -> None:
    """`generate_input_type_ids_multi` on the whole canvas: the fixture's four grids (8-connected diagonals, an island
    in a ring's hole, same-colour islands) and 48 more."""
    assert torch.equal(object_ids(tensor("vt_inputs")), tensor("object_ids"))
    assert torch.equal(object_ids(tensor("ids_canvases").long()), tensor("ids_release").long())


def test_grid_tf_gives_the_released_logits() -> None:
    model = project_model("gridtf")
    assert float((gridtf_logits(model) - tensor("gridtf_eval")).abs().max()) < TOLERANCE


def test_pl_tf_unrolls_as_released() -> None:
    """The training unroll (deterministic with dropout off): every step's logits, halting probability lambda_t and
    halting mass p_t."""
    body = project_model("pltf").body
    with torch.no_grad():
        run = body(tensor("vt_inputs"), tensor("task_tokens"))
    assert len(run.logits) == len(fixture()["pltf_step_logits"]) == 7
    assert float((torch.stack(run.logits) - tensor("pltf_step_logits")).abs().max()) < TOLERANCE
    torch.testing.assert_close(torch.stack(run.halting), tensor("pltf_halting"), atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.stack(run.distribution), tensor("pltf_distribution"), atol=1e-6, rtol=0)


def test_pl_tf_loss_and_prior_are_the_releases() -> None:
    body = project_model("pltf").body
    assert torch.equal(body.prior, tensor("pltf_prior"))
    with torch.no_grad():
        loss = body.loss(tensor("vt_inputs"), tensor("vt_targets"), tensor("task_tokens"))
    torch.testing.assert_close(loss, tensor("pltf_loss"), atol=1e-5, rtol=0)


def test_pl_tf_draws_the_halting_steps_as_released() -> None:
    """At inference the release draws each step's halting with `torch.bernoulli` from the global state: the project's
    rule, drawing from a generator seeded as the release's global state was, gives the same steps and logits."""
    body = project_model("pltf").body
    inputs, tokens = tensor("vt_inputs"), tensor("task_tokens")
    generator = torch.Generator().manual_seed(int(fixture()["halting_seed"]))
    with torch.no_grad():
        logits, steps = body.halting_logits(inputs, tokens, generator_draws(generator))
    assert torch.equal(steps, tensor("pltf_halt_step")) and len(set(steps.tolist())) > 1
    assert float((logits - tensor("pltf_halt_logits")).abs().max()) < TOLERANCE


def test_every_released_tensor_has_one_project_tensor() -> None:
    for kind in MODELS:
        names = [project_name(kind, name) for name in fixture()[f"{kind}_names"] if name not in UNREAD[kind]]
        model = create_model(MODELS[kind], grid_size=int(fixture()["grid_size"]), task_conditioning=TASK_VOCAB)
        assert sorted(names) == sorted(model.state_dict())


def _without_rotary(model: nn.Module) -> None:
    for layer in model.encoder.layers:
        layer.attention.rotary = None


def _blank_object_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid_tf, "object_ids", lambda canvas: torch.zeros(canvas.shape[0], canvas[0].numel()).long())


def test_the_fixture_catches_a_changed_grid_tf(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without RoPE, or without object ids, the logits move by far more than the tolerance."""
    model = project_model("gridtf")
    expected = tensor("gridtf_eval")
    _without_rotary(model)
    assert float((gridtf_logits(model) - expected).abs().max()) > 5 * TOLERANCE
    _blank_object_ids(monkeypatch)
    assert float((gridtf_logits(project_model("gridtf")) - expected).abs().max()) > 5 * TOLERANCE


def test_the_fixture_catches_a_changed_pl_tf() -> None:
    """Without RoPE the steps' logits move; a halting node reading the mean of the cell tokens alone (the release's
    mean includes the task tokens) moves lambda_t."""
    inputs, tokens = tensor("vt_inputs"), tensor("task_tokens")
    body = project_model("pltf").body
    body.block.attention.rotary = None
    with torch.no_grad():
        logits = torch.stack(body(inputs, tokens).logits)
    assert float((logits - tensor("pltf_step_logits")).abs().max()) > 5 * TOLERANCE
    body = project_model("pltf").body
    body.halting_probability = lambda state: body.halting(state[:, : body.cells].mean(dim=1)).squeeze(-1)
    with torch.no_grad():
        halting = torch.stack(body(inputs, tokens).halting)
    assert float((halting - tensor("pltf_halting")).abs().max()) > 1e-4

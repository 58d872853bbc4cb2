"""COGITAO's LLaDA (`models.cogitao.llada`) computes what the released one computes, and its parts obey their laws.

tests/data/cogitao_llada_differential.npz holds what COGITAO's own `LLaDAModel` (ktroyan/visualreasoning branch
features/llada, with its MLP head and task-token table, assembled as `BEFOREARCModel` assembles them) computed with
seeded weights on 4 x 4 and 6 x 6 canvases (tests/fixtures_cogitao/make_llada_fixture.py, run once from a checkout
of that branch; it is not needed here): one forward pass on a partly masked target, the 32-step unmasking, and a
training step's mask and loss. Each test re-creates the released state dict from its names, shapes and seed and
loads it through `RENAMES`.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fixtures_cogitao.make_llada_fixture import llada_weights
from fixtures_cogitao.make_model_fixture import weights_digest

from vision_bench.models.cogitao import llada
from vision_bench.models.cogitao.grid_io import CLASSES, PAD_CLASS
from vision_bench.models.cogitao.llada import MASK, LLaDABody, mask_target, rope_tables, rotate, unmasking_schedule

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "data" / "cogitao_llada_differential.npz"
TOLERANCE = 1e-5  # logits of order 1-5; the two implementations agree to the bit on the CPU
TASK_TABLE = 32  # the release's task table: 11 classes + 21 task ids, so its ids 11..31 read as they are
RENAMES = [
    (r"^encoder\.transformer\.wte\.", "tokens."),
    (r"^encoder\.transformer\.ln_f\.", "norm."),
    (r"^encoder\.transformer\.blocks\.", "layers."),
    (r"\.attn_norm\.", ".attention_norm."),
    (r"\.q_proj\.", ".attention.query."),
    (r"\.k_proj\.", ".attention.key."),
    (r"\.v_proj\.", ".attention.value."),
    (r"\.attn_out\.", ".attention.out."),
    (r"\.ff_norm\.", ".ffn_norm."),
    (r"\.ff_proj\.", ".gate."),  # SiLU acts on ff_proj's output (`llada.py:935-940`)
    (r"\.up_proj\.", ".up."),
    (r"\.ff_out\.", ".down."),
    (r"^decoder\.", "classifier."),
    (r"^embed_task_tokens_seq\.", "task_tokens."),
]
"""Released name -> the project's (regular-expression substitutions applied in order)."""
UNREAD = {"encoder.patch_embed.patch_proj.weight", "encoder.patch_embed.patch_proj.bias"}
"""The release's `PatchEmbed`, built but never called (`llada.py:1109-1110,1514-1516`): no project counterpart."""
CASES = {"4": (4, True), "6": (6, True), "untasked_4": (4, False)}
"""Fixture suffix -> (canvas, with task tokens)."""


def project_name(name: str) -> str:
    for pattern, replacement in RENAMES:
        name = re.sub(pattern, replacement, name)
    return name


def fixture() -> np.lib.npyio.NpzFile:
    return np.load(FIXTURE, allow_pickle=False)


def array(key: str) -> torch.Tensor:
    return torch.from_numpy(fixture()[key])


def released_state() -> dict[str, torch.Tensor]:
    """The released model's seeded weights under the project's names."""
    data = fixture()
    shapes = {name: tuple(int(size) for size in shape.split(",") if size)
              for name, shape in zip(data["names"], data["shapes"])}
    weights = llada_weights(shapes, int(data["seed"]))
    assert weights_digest(weights) == str(data["sha256"]), (
        "llada_weights no longer draws the fixture's weights; re-run tests/fixtures_cogitao/make_llada_fixture.py"
    )
    return {project_name(name): value for name, value in weights.items() if name not in UNREAD}


def released_body(canvas: int, tasked: bool = True) -> LLaDABody:
    body = LLaDABody(canvas, TASK_TABLE if tasked else None)
    state = released_state()
    if not tasked:
        state = {name: value for name, value in state.items() if not name.startswith("task_tokens.")}
    body.load_state_dict(state, strict=True)
    return body.eval()


def case_inputs(case: str) -> tuple[LLaDABody, torch.Tensor, torch.Tensor | None]:
    canvas, tasked = CASES[case]
    return released_body(canvas, tasked), array(f"inputs_{canvas}"), array("task_tokens") if tasked else None


def logits_difference(body: LLaDABody, case: str) -> float:
    canvas, tasked = CASES[case]
    task = array("task_tokens") if tasked else None
    with torch.no_grad():
        logits = body(array(f"inputs_{canvas}"), array(f"partial_{canvas}"), task)
    return float((logits - array(f"logits_{case}")).abs().max())


def generated(body: LLaDABody, case: str) -> torch.Tensor:
    canvas, tasked = CASES[case]
    return body.predict_classes(array(f"inputs_{canvas}"), array("task_tokens") if tasked else None).flatten(1)


@pytest.mark.parametrize("case", list(CASES))
def test_with_the_released_weights_one_forward_pass_gives_the_released_logits(case: str) -> None:
    body, _, _ = case_inputs(case)
    assert logits_difference(body, case) < TOLERANCE


@pytest.mark.parametrize("case", list(CASES))
def test_the_unmasking_gives_the_released_grids(case: str) -> None:
    """4 x 4: 16 cells, one per step for 16 steps (the release's last 16 steps commit none); 6 x 6: 36 cells."""
    body, _, _ = case_inputs(case)
    torch.testing.assert_close(generated(body, case), array(f"generated_{case}"), rtol=0, atol=0)


@pytest.mark.parametrize("canvas", [4, 6])
def test_a_training_step_masks_and_scores_as_released(canvas: int) -> None:
    """The same torch seed draws the same mask as the release's `mask_input_sequence`, and the loss is the
    release's mean cross-entropy over the masked cells."""
    body = released_body(canvas)
    seed = int(fixture()["train_seed"])
    torch.manual_seed(seed)
    masked, _ = mask_target(array(f"targets_{canvas}").flatten(1))
    torch.testing.assert_close(masked, array(f"train_masked_{canvas}"), rtol=0, atol=0)
    torch.manual_seed(seed)
    with torch.no_grad():
        loss = body.train().loss(array(f"inputs_{canvas}"), array(f"targets_{canvas}"), array("task_tokens"))
    assert float(loss) == pytest.approx(float(fixture()[f"train_loss_{canvas}"]), rel=1e-6)


def test_an_eval_mode_loss_is_reproducible_and_leaves_the_training_stream_alone() -> None:
    """Validation's loss draws its masks from EVAL_MASK_SEED: the same batch gives the same loss whatever ran before,
    and the global RNG (training's masks) is where it was."""
    body = released_body(4)
    inputs, targets, code = array("inputs_4"), array("targets_4"), array("task_tokens")
    torch.manual_seed(1)
    state = torch.get_rng_state()
    with torch.no_grad():
        first = body.loss(inputs, targets, code)
        torch.manual_seed(2)
        second = body.loss(inputs, targets, code)
        torch.set_rng_state(state)
        body.loss(inputs, targets, code)
    assert torch.equal(first, second)
    assert torch.equal(torch.get_rng_state(), state)
    generator = torch.Generator().manual_seed(llada.EVAL_MASK_SEED)
    masked, mask = mask_target(targets.flatten(1), generator)
    with torch.no_grad():
        logits = body(inputs, masked.view_as(targets), code)
    expected = F.cross_entropy(logits[mask], targets.flatten(1)[mask])
    torch.testing.assert_close(first, expected)


def test_every_released_tensor_but_the_unused_patch_embedding_has_one_project_tensor() -> None:
    names = [project_name(name) for name in fixture()["names"] if name not in UNREAD]
    assert sorted(names) == sorted(LLaDABody(4, TASK_TABLE).state_dict())
    assert set(fixture()["names"]) >= UNREAD


def _swap_gate_and_up(body: LLaDABody) -> None:
    for layer in body.layers:
        layer.gate, layer.up = layer.up, layer.gate


def _drop_final_norm(body: LLaDABody) -> None:
    body.norm = torch.nn.Identity()  # type: ignore[assignment]


def _interleaved_rope(monkeypatch: pytest.MonkeyPatch) -> None:
    """RoPE pairing components 2i and 2i + 1 (rotary_embedding_torch's, GPT-J's) instead of i and i + 16."""

    def interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        def spread(table: torch.Tensor) -> torch.Tensor:  # (f0..f15, f0..f15) -> (f0, f0, f1, f1, ...)
            return table[..., :16].repeat_interleave(2, dim=-1)

        pairs = x.unflatten(-1, (-1, 2))
        turned = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
        return x * spread(cos) + turned * spread(sin)

    monkeypatch.setattr(llada, "rotate", interleaved)


def _theta_10000(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llada, "ROPE_THETA", 10000.0)


@pytest.mark.parametrize(
    "change", [_swap_gate_and_up, _drop_final_norm],
    ids=["silu_on_up_projection", "without_final_norm"],
)
def test_the_fixture_catches_a_changed_layer(change: Callable[[LLaDABody], None]) -> None:
    body = released_body(6)
    change(body)
    assert logits_difference(body, "6") > 100 * TOLERANCE


@pytest.mark.parametrize("change", [_interleaved_rope, _theta_10000], ids=["interleaved_rope", "rope_theta_10000"])
def test_the_fixture_catches_a_changed_rope(change: Callable[[pytest.MonkeyPatch], None],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    change(monkeypatch)
    assert logits_difference(released_body(6), "6") > 100 * TOLERANCE


@pytest.mark.parametrize("schedule", [[36] + [0] * 31, [1] * 28 + [2] * 4], ids=["all_at_once", "ones_first"])
def test_the_fixture_catches_another_unmasking_order(schedule: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llada, "unmasking_schedule", lambda cells: schedule)
    assert not torch.equal(generated(released_body(6), "6"), array("generated_6"))


def test_task_tokens_are_read_in_order() -> None:
    """Unlike Vanilla-TF's, LLaDA's task tokens take RoPE positions: the same tokens in another order change the
    output."""
    body = released_body(6)
    inputs, partial, tokens = array("inputs_6"), array("partial_6"), array("task_tokens")
    with torch.no_grad():
        assert (body(inputs, partial, tokens.flip(1))[:2] - body(inputs, partial, tokens)[:2]).abs().max() > 1e-3


LAYER = 2 * 128 + 4 * 128 * 128 + 3 * 128 * 384  # two RMSNorm weights, q, k, v, o, gate, up, down: 213,248
HEAD = 128 * 128 + 128 + 128 * 11 + 11  # 17,931


@pytest.mark.parametrize("canvas", [15, 20])
def test_parameter_count(canvas: int) -> None:
    """6 blocks, the 12 x 128 token table, the final norm and the head, at any canvas: 1,299,083 (the release's
    1,299,107 counts the unused 24-parameter PatchEmbed); a task table adds vocabulary x 128."""
    expected = 6 * LAYER + 12 * 128 + 128 + HEAD
    assert expected == 1_299_083
    assert sum(p.numel() for p in LLaDABody(canvas, None).parameters()) == expected
    assert sum(p.numel() for p in LLaDABody(canvas, 29).parameters()) == expected + 29 * 128


def test_initialisation_is_mitchells() -> None:
    """Truncated normal at +-3 sigma, sigma = 1 / sqrt(fan-in), output maps of block l over sqrt(2 (l + 1)); no
    biases in the blocks; norms at 1."""
    torch.manual_seed(0)
    body = LLaDABody(4, None)
    truncated = 0.98658  # the standard deviation of a unit normal cut at +-3

    def check(weight: torch.Tensor, sigma: float) -> None:
        weight = weight.detach()
        assert float(weight.abs().max()) <= 3 * sigma + 1e-7
        assert float(weight.std()) == pytest.approx(truncated * sigma, rel=0.06)

    check(body.tokens.weight, 128 ** -0.5)
    for index, layer in enumerate(body.layers):
        depth = math.sqrt(2 * (index + 1))
        for linear in (layer.attention.query, layer.attention.key, layer.attention.value, layer.gate, layer.up):
            check(linear.weight, 128 ** -0.5)
        check(layer.attention.out.weight, 128 ** -0.5 / depth)
        check(layer.down.weight, 384 ** -0.5 / depth)
        assert all(module.bias is None for module in layer.modules() if isinstance(module, torch.nn.Linear))
        assert torch.equal(layer.attention_norm.weight, torch.ones(128))


def test_rope_tables_hold_the_hand_computed_angles() -> None:
    cos, sin = rope_tables(5, torch.device("cpu"))
    assert cos.shape == sin.shape == (5, 32)
    for position in (0, 1, 4):
        for index in (0, 1, 15):
            angle = position * 500000.0 ** (-2 * index / 32)
            for half in (index, index + 16):  # the 16 frequencies repeated
                assert float(cos[position, half]) == pytest.approx(math.cos(angle), abs=1e-6)
                assert float(sin[position, half]) == pytest.approx(math.sin(angle), abs=1e-6)


def test_rope_rotates_the_two_halves_of_each_head_together() -> None:
    """Unit vector e_i (i < 16) at position p -> cos(p w_i) e_i + sin(p w_i) e_(i+16): rotate-half pairs i with
    i + 16, not 2i with 2i + 1."""
    cos, sin = rope_tables(4, torch.device("cpu"))
    vector = torch.zeros(1, 1, 4, 32)
    vector[..., 1] = 1.0
    rotated = rotate(vector, cos, sin)[0, 0]
    frequency = 500000.0 ** (-2 / 32)
    for position in range(4):
        expected = torch.zeros(32)
        expected[1], expected[17] = math.cos(position * frequency), math.sin(position * frequency)
        torch.testing.assert_close(rotated[position], expected, atol=1e-6, rtol=0)


def test_rope_scores_depend_on_the_offset_only() -> None:
    cos, sin = rope_tables(10, torch.device("cpu"))
    generator = torch.Generator().manual_seed(0)
    query, key = torch.randn(2, 1, 1, 1, 32, generator=generator).expand(2, 1, 1, 10, 32)

    def score(at_query: int, at_key: int) -> float:
        return float(rotate(query, cos, sin)[0, 0, at_query] @ rotate(key, cos, sin)[0, 0, at_key])

    assert score(5, 2) == pytest.approx(score(8, 5), abs=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)


@pytest.mark.parametrize(("canvas", "expected"), [
    (15, [8] + [7] * 31),  # 225 = 7 * 32 + 1
    (20, [13] * 16 + [12] * 16),  # 400 = 12 * 32 + 16
    (4, [1] * 16 + [0] * 16),
])
def test_unmasking_schedule(canvas: int, expected: list[int]) -> None:
    assert unmasking_schedule(canvas * canvas) == expected
    assert sum(expected) == canvas * canvas


def test_denoising_fills_every_cell_in_32_passes_and_never_remasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """G = 15: the target tokens each forward pass reads; step i reads 225 - (cells committed before i) masks,
    a cell once committed keeps its class, and the output has no MASK left."""
    torch.manual_seed(0)
    body = LLaDABody(15, None).eval()
    seen: list[torch.Tensor] = []
    forward = body.forward

    def recording(inputs: torch.Tensor, target_tokens: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        seen.append(target_tokens.clone())
        return forward(inputs, target_tokens, task_code)

    monkeypatch.setattr(body, "forward", recording)
    inputs = torch.randint(0, CLASSES, (2, 15, 15), generator=torch.Generator().manual_seed(1))
    output = body.predict_classes(inputs, None)
    assert len(seen) == 32
    assert output.shape == (2, 15, 15) and int(output.max()) < CLASSES and int(output.min()) >= 0
    committed = 0
    for tokens, count in zip(seen + [output], unmasking_schedule(225) + [0]):
        assert (tokens == MASK).sum(dim=(1, 2)).tolist() == [225 - committed] * 2
        known = tokens != MASK
        assert torch.equal(output[known], tokens[known])
        committed += count


def _fixed_mask(mask: torch.Tensor) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    return lambda cells, generator=None: (torch.where(mask, MASK, cells), mask)


def test_the_loss_counts_the_masked_target_cells_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two masked cells in sample 0 (one of them padding), none in sample 1: the loss is the mean cross-entropy of
    those two cells' logits, whatever the other cells' targets."""
    torch.manual_seed(0)
    body = LLaDABody(3, None)
    inputs = torch.randint(0, CLASSES, (2, 3, 3))
    target = torch.randint(0, 10, (2, 3, 3))
    target[0, 0, 1] = PAD_CLASS
    mask = torch.zeros(2, 9, dtype=torch.bool)
    mask[0, [1, 5]] = True
    monkeypatch.setattr(llada, "mask_target", _fixed_mask(mask))
    masked = torch.where(mask.view(2, 3, 3), MASK, target)
    with torch.no_grad():
        logits = body(inputs, masked, None)
        loss = body.loss(inputs, target, None)
    expected = F.cross_entropy(logits[0, [1, 5]], target.flatten(1)[0, [1, 5]])
    torch.testing.assert_close(loss, expected)
    assert float(F.cross_entropy(logits.flatten(0, 1), target.flatten())) != pytest.approx(float(expected), abs=1e-3)


def test_a_batch_without_masked_cells_has_a_zero_loss_and_zero_gradients(monkeypatch: pytest.MonkeyPatch) -> None:
    body = LLaDABody(3, None)
    monkeypatch.setattr(llada, "mask_target", _fixed_mask(torch.zeros(2, 9, dtype=torch.bool)))
    loss = body.loss(torch.zeros(2, 3, 3, dtype=torch.long), torch.ones(2, 3, 3, dtype=torch.long), None)
    loss.backward()
    assert float(loss.detach()) == 0.0
    assert all(not parameter.grad.any() for parameter in body.parameters() if parameter.grad is not None)


def test_mask_target_draws_t_then_the_cells_from_the_global_rng() -> None:
    """Per sample t ~ U(0, 1), each cell masked when its uniform is below 0.999 t + 0.001; padding cells too;
    unmasked cells keep their class."""
    cells = torch.full((64, 100), PAD_CLASS)
    cells[:, ::2] = 3
    torch.manual_seed(3)
    t = torch.rand(64)
    expected = torch.rand(64, 100) < (0.999 * t + 0.001)[:, None]
    torch.manual_seed(3)
    masked, mask = mask_target(cells)
    assert torch.equal(mask, expected)
    assert torch.equal(masked, torch.where(expected, MASK, cells))
    assert bool(mask[:, 1::2].any())  # padding is masked too
    ratios = mask.float().mean(dim=1)
    assert float(ratios.min()) < 0.1 and float(ratios.max()) > 0.9  # one ratio per sample, spread over [0, 1]


def test_a_few_optimizer_steps_lower_the_loss() -> None:
    torch.manual_seed(0)
    body = LLaDABody(3, 8)
    inputs = torch.randint(0, CLASSES, (4, 3, 3))
    target = inputs.flip(2)
    code = torch.randint(0, 8, (4, 4))

    def loss_at_seed() -> float:
        torch.manual_seed(123)
        with torch.no_grad():
            return float(body.loss(inputs, target, code))

    before = loss_at_seed()
    optimizer = torch.optim.AdamW(body.parameters(), lr=1e-3, weight_decay=0.01)
    for _ in range(30):
        optimizer.zero_grad()
        body.loss(inputs, target, code).backward()
        optimizer.step()
    assert loss_at_seed() < 0.75 * before


def test_a_state_dict_round_trip_keeps_the_predictions() -> None:
    torch.manual_seed(0)
    body = LLaDABody(4, 8).eval()
    buffer = io.BytesIO()
    torch.save(body.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(1)
    copy = LLaDABody(4, 8).eval()
    copy.load_state_dict(torch.load(buffer, weights_only=True))
    inputs = torch.randint(0, CLASSES, (3, 4, 4), generator=torch.Generator().manual_seed(2))
    code = torch.randint(0, 8, (3, 4), generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(copy.predict_classes(inputs, code), body.predict_classes(inputs, code), rtol=0, atol=0)
    assert not torch.equal(LLaDABody(4, 8).eval().predict_classes(inputs, code), body.predict_classes(inputs, code))


# --- cogitao:llada, the family's preset ------------------------------------------------------------------------


def _grid_batch(count: int = 4) -> dict[str, torch.Tensor]:
    """Grids of 4x4 and 3x2 cells (padded with -1), targets recoloured c -> (c + 1) % 10, with a task code."""
    generator = torch.Generator().manual_seed(0)
    shapes = [(3, 2) if index % 2 else (4, 4) for index in range(count)]
    inputs = torch.full((count, 4, 4), -1)
    for index, (height, width) in enumerate(shapes):
        inputs[index, :height, :width] = torch.randint(0, 10, (height, width), generator=generator)
    targets = torch.where(inputs >= 0, (inputs + 1) % 10, inputs)
    return {"input_grid": inputs, "target_grid": targets, "grid_shape": torch.tensor(shapes),
            "task_code": torch.randint(0, 29, (count, 4), generator=generator)}


def test_the_preset_trains_on_the_padded_canvas_and_predicts_cropped_grids(tmp_path: Path) -> None:
    """`cogitao:llada` pads input and target to its canvas with the padding class, its training loss is the body's
    on them (same mask draws), its grids are the body's unmasking cut to each input's shape, and it saves and loads
    back to the same grids."""
    from vision_bench.models import create_model, load_pretrained, save_pretrained

    options = {"grid_size": 4, "task_conditioning": True}
    torch.manual_seed(0)
    model = create_model("cogitao:llada", **options).eval()
    assert model.describe()["canvas"] == 4 and model.describe()["loss"] == "masked_diffusion"
    batch = _grid_batch()
    inputs = model.batch_inputs(batch)
    assert inputs[1, 3].eq(PAD_CLASS).all() and inputs[1, :, 2:].eq(PAD_CLASS).all()
    target = torch.where(batch["target_grid"] >= 0, batch["target_grid"], PAD_CLASS)
    torch.manual_seed(3)
    loss = model.training_loss(batch)
    torch.manual_seed(3)
    torch.testing.assert_close(loss, model.body.loss(inputs, target, batch["task_code"]))
    grids = model.predict_grids(batch)
    classes = model.body.predict_classes(inputs, batch["task_code"])
    assert torch.equal(grids[0], classes[0]) and torch.equal(grids[1, :3, :2], classes[1, :3, :2])
    assert grids[1, 3:].eq(-1).all() and grids[1, :, 2:].eq(-1).all()
    save_pretrained(model, tmp_path / "llada", options=options)
    assert torch.equal(load_pretrained(tmp_path / "llada").predict_grids(batch), grids)


def test_the_preset_refuses_images_and_oversized_grids_in_one_line() -> None:
    from render.spec import RenderSpec
    from vision_bench.errors import ConfigError
    from vision_bench.models import create_model

    spec = RenderSpec(size=(16, 16), layout="cell:4:top-left")
    with pytest.raises(ConfigError, match="reads grids only: its cells are tokens") as caught:
        create_model("cogitao:llada", image_size=16, render_spec=spec, input="image")
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"grids of up to 4x4 cells .* larger grid_size \(now 3\)"):
        create_model("cogitao:llada", grid_size=3).training_loss(_grid_batch())

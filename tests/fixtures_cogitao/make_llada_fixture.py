"""Make tests/data/cogitao_llada_differential.npz: COGITAO's released LLaDA run on fixed grids.

LLaDA exists only on branch `features/llada` (c60842d) of ktroyan/visualreasoning. Unpack that branch somewhere and
run this from the project root with tests/ on the path:

    mkdir /tmp/vr_llada && git -C <visualreasoning clone> archive features/llada | tar -x -C /tmp/vr_llada
    PYTHONPATH=tests python -m fixtures_cogitao.make_llada_fixture /tmp/vr_llada

The released `networks/backbones/llada.py` (`LLaDAModel`) is loaded from the checkout by its path, never copied,
after make_model_fixture's `import_released` has loaded `networks/backbones/vit.py` (whose `PatchEmbed` llada.py
imports) with that generator's stand-ins; `omegaconf`, which llada.py names only in annotations, is stood in when
it is not installed. Its config is the checkout's own `configs/networks/backbones/llada.yaml` with `init_device`
set to cpu (the YAML's is cuda). The model is assembled as `models/beforearc_model.py` `BEFOREARCModel` assembles
it for BEFOREARC without visual tokens and with task tokens (`:810-841`): `encoder` (`LLaDAModel`, 11 classes, so
vocabulary 12 and MASK 11), `decoder` (the MLP head, 2 layers, hidden 128, ReLU) and `embed_task_tokens_seq`
(`nn.Embedding(11 + 21, 128)`). `released_logits` is `forward_sample` (`:977-1008`) on [input | target] cut to the
target half (`:969`).

The weights are `llada_weights`: make_model_fixture's `released_weights` (every tensor of the state dict from a
RandomState seeded by its name; the test re-creates them from the names, shapes and seed stored here) with the
head's biases scaled by HEAD_BIAS_SCALE: at N(0, 1) they alone decide the class of nearly every cell, and a
generation of one class throughout cannot tell one unmasking order from another. Nothing of the model depends
on the canvas (RoPE has no weights; the unused `PatchEmbed` is a 1x1 convolution), so one set of weights serves
both CANVASES: 4 x 4 (16 cells, fewer than the 32 steps, so the release's last 16 steps commit nothing) and 6 x 6
(36 cells: 4 steps commit 2, then 28 commit 1).

Stored, for each canvas G (`_G` suffix): `inputs` and `targets` (B x G x G classes, padded with 10 right and bottom
as COGITAO pads), `partial` (the targets with a seeded half of the cells set to MASK), `logits` (B x G^2 x 11, one
forward pass on [input | partial] with the task tokens), `generated` (B x G^2, the release's
`generate_masked_sequence`: 32 steps of confidence-ordered unmasking, run as on the GPU the paper's runs used, where
the confidences are float64: on a CPU-only machine the release computes them in float32, `llada.py:1391`), and the
training step's `train_masked` (the release's `mask_input_sequence` after `torch.manual_seed(TRAIN_SEED)`) and
`train_loss` (cross-entropy over the masked cells, `beforearc_model.py:238-258`). For 4 x 4 also `logits_untasked`
and `generated_untasked`, without task tokens (EnvGen and sample-efficiency runs). Plus `task_tokens` (B x 4
released ids, identity = 11), `names`, `shapes` and `sha256` of the weights.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any
from unittest import mock

import numpy as np
import torch
import torch.nn.functional as F
import yaml
from fixtures_cogitao.make_model_fixture import (
    _load_file,
    _stand_in,
    import_released,
    released_weights,
    weights_digest,
)
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "cogitao_llada_differential.npz"
SEED = 0
TRAIN_SEED = 7
CANVASES = (4, 6)
CLASSES = 11  # 10 colours + PAD, without visual tokens
MASK = 11
TASK_IDS = 21  # identity + 20 transformations
GRIDS = {4: [(4, 4), (3, 2), (2, 3)], 6: [(6, 6), (4, 5), (2, 3)]}
"""(rows, columns) of each sample's input and target grids, placed top-left on the canvas."""
TASK_TOKENS = [[12, 20, 11, 11], [31, 15, 27, 13], [11, 11, 11, 11]]  # released ids, identity (11) pads
BASE_CONFIG = NS(data_env="BEFOREARC")
HEAD_CONFIG = NS(embed_dim=128, hidden_dim=128, activation="relu")  # configs/networks/heads/mlp.yaml
MODEL_CONFIG = NS(patch_size=1, task_embedding=NS(enabled=True, approach="task_tokens"))  # BEFOREARCModel.yaml
HEAD_BIAS_SCALE = 0.1


def llada_weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, torch.Tensor]:
    """`released_weights`, the head's biases (`decoder.*.bias`) times HEAD_BIAS_SCALE (module docstring)."""
    weights = released_weights(shapes, seed)
    for name in weights:
        if name.startswith("decoder.") and name.endswith(".bias"):
            weights[name] = weights[name] * HEAD_BIAS_SCALE
    return weights


def _namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return NS(**{key: _namespace(item) for key, item in value.items()})
    return value


def llada_config(checkout: Path) -> NS:
    """The checkout's llada.yaml as attributes, on the CPU; `rms_norm_eps: 1e-05` a float, as OmegaConf reads it
    (PyYAML reads a mantissa without a dot as a string)."""
    data = yaml.safe_load((checkout / "configs" / "networks" / "backbones" / "llada.yaml").read_text())
    config = _namespace(data["backbone_network"])
    config.init_device = "cpu"
    config.rms_norm_eps = float(config.rms_norm_eps)
    return config


def import_llada(checkout: Path) -> NS:
    """The released vit (through `import_released`), mlp and llada modules, loaded from the checkout's files."""
    released = import_released(checkout)
    if importlib.util.find_spec("omegaconf") is None:
        _stand_in("omegaconf", DictConfig=dict)
    released.llada = _load_file(checkout, "networks.backbones.llada")
    return released


def released_model(released: NS, checkout: Path, canvas: int) -> nn.ModuleDict:
    """BEFOREARCModel's encoder, decoder and task embedding for backbone llada, as it builds them."""
    encoder = released.llada.LLaDAModel(BASE_CONFIG, MODEL_CONFIG, llada_config(checkout), canvas, 1, CLASSES)
    decoder = released.mlp.get_mlp_head(HEAD_CONFIG, 128, CLASSES, activation="relu", num_layers=2)
    embedding = nn.Embedding(CLASSES + TASK_IDS, 128)
    return nn.ModuleDict({"encoder": encoder, "decoder": decoder, "embed_task_tokens_seq": embedding})


def forward_sample(model: nn.ModuleDict, sequence: torch.Tensor, task: torch.Tensor | None) -> torch.Tensor:
    """`BEFOREARCModel.forward_sample` for llada with the mlp head: (B, T) tokens -> (B, T, CLASSES) logits."""
    encoded = model["encoder"](sequence, task_embeddings=task, example_in_context=None, x_grid_object_ids=None)
    return model["decoder"](encoded)


def fixture_inputs(canvas: int) -> dict[str, torch.Tensor]:
    """Inputs and targets on the canvas (colours from a fixed seed, 10 beyond each grid) and the partly masked
    targets."""
    random = np.random.RandomState(SEED + canvas)
    inputs = np.full((len(GRIDS[canvas]), canvas, canvas), CLASSES - 1, dtype=np.int64)
    targets = inputs.copy()
    for index, (rows, columns) in enumerate(GRIDS[canvas]):
        inputs[index, :rows, :columns] = random.randint(0, 10, (rows, columns))
        targets[index, :rows, :columns] = random.randint(0, 10, (rows, columns))
    partial = np.where(random.random_sample(targets.shape) < 0.5, MASK, targets)
    return {"inputs": torch.from_numpy(inputs), "targets": torch.from_numpy(targets),
            "partial": torch.from_numpy(partial)}


def run_canvas(model: nn.ModuleDict, data: dict[str, torch.Tensor], task: torch.Tensor | None) -> dict[str, Any]:
    """The released logits on [input | partial] and the released generation, target halves only."""
    inputs, targets = data["inputs"].flatten(1), data["targets"].flatten(1)
    cells = inputs.shape[1]
    with torch.no_grad():
        logits = forward_sample(model, torch.cat([inputs, data["partial"].flatten(1)], dim=1), task)[:, cells:]

    def forward_f(x: torch.Tensor, y: torch.Tensor, task_tokens: torch.Tensor | None, **_: object) -> torch.Tensor:
        return forward_sample(model, x, task_tokens)

    params = {"task_tokens": task, "example_in_context": None, "x_grid_object_ids": None}
    with mock.patch.object(torch.cuda, "is_available", lambda: True):  # float64 confidences, as on the GPU
        generated = model["encoder"].generate_masked_sequence(forward_f, inputs, targets, params)[:, cells:]
    float32 = model["encoder"].generate_masked_sequence(forward_f, inputs, targets, params)[:, cells:]
    print(f"  float32 confidences give the same generation: {bool((float32 == generated).all())}")
    return {"logits": logits.numpy(), "generated": generated.numpy()}


def released_training_loss(model: nn.ModuleDict, data: dict[str, torch.Tensor], task: torch.Tensor) -> dict[str, Any]:
    """`BEFOREARCModel.forward` in training mode and `step`'s loss: the masked target and the mean cross-entropy
    over its masked cells, with the torch RNG seeded by TRAIN_SEED."""
    inputs, targets = data["inputs"].flatten(1), data["targets"].flatten(1)
    torch.manual_seed(TRAIN_SEED)
    model.train()
    with torch.no_grad():
        masked, mask, targets = model["encoder"].mask_input_sequence(targets)
        logits = forward_sample(model, torch.cat([inputs, masked], dim=1), task)[:, inputs.shape[1]:]
        loss = F.cross_entropy(logits[mask], targets[mask]).float()
    model.eval()
    return {"train_masked": masked.numpy(), "train_loss": loss.numpy()}


def main(checkout: Path) -> None:
    checkout = checkout.resolve()
    released = import_llada(checkout)
    torch.manual_seed(SEED)
    model = released_model(released, checkout, CANVASES[0]).eval()
    state = dict(model.named_parameters()) | dict(model.named_buffers())
    weights = llada_weights({name: tuple(value.shape) for name, value in state.items()}, SEED)
    with torch.no_grad():
        for name, value in state.items():
            value.copy_(weights[name])
    tokens = torch.tensor(TASK_TOKENS)
    task = model["embed_task_tokens_seq"](tokens).detach()
    arrays: dict[str, np.ndarray] = {"seed": np.array(SEED), "train_seed": np.array(TRAIN_SEED),
                                     "canvases": np.array(CANVASES), "task_tokens": tokens.numpy()}
    for canvas in CANVASES:
        print(f"canvas {canvas} x {canvas}")
        data = fixture_inputs(canvas)
        arrays |= {f"{key}_{canvas}": value.numpy() for key, value in data.items()}
        arrays |= {f"{key}_{canvas}": value for key, value in run_canvas(model, data, task).items()}
        arrays |= {f"{key}_{canvas}": value for key, value in released_training_loss(model, data, task).items()}
        if canvas == CANVASES[0]:
            print("  without task tokens")
            arrays |= {f"{key}_untasked_{canvas}": value for key, value in run_canvas(model, data, None).items()}
    arrays["names"] = np.array(list(state))
    arrays["shapes"] = np.array([",".join(map(str, value.shape)) for value in state.values()])
    arrays["sha256"] = np.array(weights_digest(weights))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit(__doc__)
    default = os.environ.get("VISUALREASONING_LLADA_DIR") or "/tmp/vr_llada"
    main(Path(sys.argv[1] if len(sys.argv) == 2 else default))

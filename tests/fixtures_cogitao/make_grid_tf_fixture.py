"""Make tests/data/cogitao_grid_tf_differential.npz: COGITAO's released Grid-TF and PL-TF, their visual-token canvas
and their object ids, run on fixed grids.

Run from the project root with a checkout of COGITAO's model code (ktroyan/visualreasoning at f84f79d) beside the
project, or named by the argument or by VISUALREASONING_DIR, and with the two packages its RoPE code imports,
einops and rotary-embedding-torch 0.8.6 (the version its uv.lock pins), importable, e.g. installed apart from the
project's environment:

    pip install --target /tmp/vr_pkgs einops rotary-embedding-torch==0.8.6
    PYTHONPATH=/tmp/vr_pkgs python tests/fixtures_cogitao/make_grid_tf_fixture.py [../visualreasoning]

As make_model_fixture.py (whose stand-ins and seeded weights it reuses), the released modules are loaded from the
checkout's files, never copied: `networks/backbones/vit.py` (`VisionTransformer`), `networks/backbones/looped_vit.py`
(`LoopedVisionTransformer`), `networks/heads/mlp.py`, `data/external/vitarc/obj_idx_utils.py`
(`generate_input_type_ids_multi`) and `data/beforearc_data.py` (`pad_with_2d_visual_tokens`, `create_object_grid`;
stand-ins for its `data.data_base` and, when missing, `datasets`), and from `models/beforearc_model.py` only the
definitions of `ReconstructionLoss` and `RegularizationLoss` (read with `ast`: the file's imports need Lightning and
every backbone).

The grids (`grids`, `targets`: B x M x M padded with -1, M = GRID_SIZE) are laid out by the release's
`pad_with_2d_visual_tokens` on the canvas of side S = M + 2 (`vt_inputs`, `vt_targets`) and the input canvases' object
ids are its `create_object_grid`'s (`object_ids`, B x S^2). `ids_grids` / `ids_canvases` / `ids_release` repeat that
for IDS_COUNT more grids on a canvas of IDS_GRID_SIZE + 2: objects of random colours and shapes on a background of 0
(8-connected diagonals, holes, islands in holes, touching objects) and some grids of random cells.

The models are assembled as `BEFOREARCModel` assembles them, with SimpleNamespace configs at the paper's commands and
its configs of commit 90928a4 (`GRID_TF_MODEL`, `PL_TF_MODEL`; vit.yaml and looped_vit.yaml: `VIT_CONFIG`,
`LOOPED_CONFIG`) in the CompGen setting (task tokens, released ids 15-35 with visual tokens): encoder, MLP head (hidden
128) on every cell token, `nn.Embedding(15 + 21, width)`. Every trainable tensor is `released_weights`' (seeded by
name); the fixed ones (the RoPE frequencies, PL-TF's sin-cos table) keep their released values.

Grid-TF: `gridtf_eval`, the logits of every cell (B x S^2 x 15) in eval mode. PL-TF, its dropout set to 0 so that the
training unroll is deterministic: in training mode (the EPSILON rule), `pltf_step_logits` (T x B x S^2 x 15),
`pltf_halting` (the halting node's lambda_t, T' x B, read by a forward hook), `pltf_distribution` (p_t, T x B) and
`pltf_loss` (the released `ReconstructionLoss` + 0.01 `RegularizationLoss` against `vt_targets`), the prior
`pltf_prior`; in eval mode after `torch.manual_seed(HALTING_SEED)`, the release's sampled halting: `pltf_halt_step`
(B) and the logits at those steps `pltf_halt_logits` (B x S^2 x 15). Per model the released names and shapes of the
seeded tensors and a SHA-256 of them, as in make_model_fixture.py. tests/test_cogitao_grid_tf_released.py compares.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures_cogitao.make_model_fixture import (  # noqa: E402
    BASE_CONFIG,
    HEAD_CONFIG,
    TASK_EMBEDDING,
    TASK_IDS,
    VIT_CONFIG,
    _load_file,
    _stand_in,
    _unused,
    released_weights,
    weights_digest,
)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "cogitao_grid_tf_differential.npz"
SEED = 0
HALTING_SEED = 0  # the release's global seed before its inference halting
GRID_SIZE = 5
CLASSES = 15  # 10 colours, PAD and four visual tokens
IDS_GRID_SIZE = 10
IDS_COUNT = 48
TASK_TOKENS = [[16, 24, 15, 15], [35, 19, 31, 17], [15, 15, 15, 15], [20, 20, 15, 15]]  # identity = 15
LOOPED_CONFIG = NS(  # looped_vit.yaml at 90928a4
    embed_dim=256, num_heads=8, mlp_ratio=4, qkv_bias=True, num_layers=1, num_loops=6, ape_dropout_rate=0.0,
    attn_dropout_rate=0.1, attn_proj_dropout_rate=0.0, ff_dropout_rate=0.1,
    init_weights_cfg=NS(type="xavier", distribution="uniform"),
)
PONDERNET = NS(enabled=True, max_steps=7, epsilon=0.01, hidden_dim=128, beta=0.01, lambda_p=0.05)  # BEFOREARCModel.yaml


def _model_config(grid_tf: bool) -> NS:
    """The Grid-TF command (`--ape_mixer weighted_sum_vec --ope_enabled true --num_reg_tokens 6`) or PL-TF's
    (`--ape_mixer sum --ope_enabled false`), both with visual tokens, 2D sin-cos APE and RoPE."""
    return NS(
        patch_size=1, use_ohe_repr=True, use_cls_token=False, num_reg_tokens=6 if grid_tf else 0,
        num_elementary_tasks=TASK_IDS, task_embedding=TASK_EMBEDDING,
        ape=NS(enabled=True, ape_type="2dsincos", mixer="weighted_sum_vec" if grid_tf else "sum"),
        ope=NS(enabled=grid_tf), rpe=NS(enabled=True, rpe_type="rope"), attention_map=NS(enabled=False),
        encoder_aggregation=NS(enabled=False), pondernet=PONDERNET if not grid_tf else NS(enabled=False),
    )


def fixture_grids() -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets) B x GRID_SIZE x GRID_SIZE padded with -1: objects on 0 with an 8-connected diagonal pair and
    a separate island of the same colour; random colours; all zeros (its target of another size); a ring with an
    island in its hole."""
    random = np.random.RandomState(SEED)
    first = np.zeros((5, 5), np.int64)
    first[0, 0] = first[1, 0] = first[1, 1] = 3
    first[3, 1] = 3
    first[3, 3] = first[4, 4] = 7
    ring = np.full((5, 5), 2, np.int64)
    ring[1:4, 1:4] = 0
    ring[2, 2] = 2
    inputs = [first, random.randint(0, 10, (4, 3)), np.zeros((2, 3), np.int64), ring]
    targets = [np.where(grid > 0, (grid + 1) % 10, 0) for grid in inputs]
    targets[2] = np.array([[0, 5], [5, 0], [0, 0]])
    return _padded(inputs, GRID_SIZE), _padded(targets, GRID_SIZE)


def ids_grids() -> np.ndarray:
    """IDS_COUNT grids of up to IDS_GRID_SIZE a side, padded with -1 (module docstring)."""
    random = np.random.RandomState(SEED + 1)
    grids = []
    for index in range(IDS_COUNT):
        height, width = random.randint(1, IDS_GRID_SIZE + 1, 2)
        if index % 6 == 5:
            grids.append(random.randint(0, 10, (height, width)))
            continue
        grid = np.zeros((height, width), np.int64)
        for _ in range(random.randint(0, 6)):
            top, left = random.randint(0, height), random.randint(0, width)
            shape = random.rand(random.randint(1, 5), random.randint(1, 5)) < 0.6
            box = grid[top:top + shape.shape[0], left:left + shape.shape[1]]
            box[shape[:box.shape[0], :box.shape[1]]] = random.randint(1, 10)
        grids.append(grid)
    return _padded(grids, IDS_GRID_SIZE)


def _padded(grids: list[np.ndarray], size: int) -> np.ndarray:
    out = np.full((len(grids), size, size), -1, np.int64)
    for index, grid in enumerate(grids):
        out[index, : grid.shape[0], : grid.shape[1]] = grid
    return out


def import_released(checkout: Path) -> NS:
    """COGITAO's vit, looped_vit, mlp, obj_idx_utils and beforearc_data modules and its two PonderNet losses."""
    sys.dont_write_bytecode = True
    for package in ("utility", "utility.rearc", "networks", "networks.backbones", "networks.heads", "data",
                    "data.external", "data.external.vitarc"):
        _stand_in(package)
    _stand_in("utility.custom_logging", logger=__import__("logging").getLogger("visualreasoning"))
    _stand_in("utility.utils", plot_absolute_positional_embeddings=lambda *args, **kwargs: None)
    _stand_in("data.data_base", DataModuleBase=object)
    for package in ("seaborn", "datasets"):
        if importlib.util.find_spec(package) is None:
            _stand_in(package)
            sys.modules[package].__getattr__ = _unused(package)  # type: ignore[attr-defined]
    _load_file(checkout, "utility.rearc.utils")
    namespace: dict[str, object] = {"torch": torch, "nn": nn, "F": F}
    source = (checkout / "models" / "beforearc_model.py").read_text()
    wanted = [node for node in ast.parse(source).body
              if isinstance(node, ast.ClassDef) and node.name in ("ReconstructionLoss", "RegularizationLoss")]
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "beforearc_model.py", "exec"), namespace)  # noqa: S102
    return NS(
        vit=_load_file(checkout, "networks.backbones.vit"),
        looped=_load_file(checkout, "networks.backbones.looped_vit"),
        mlp=_load_file(checkout, "networks.heads.mlp"),
        objects=_load_file(checkout, "data.external.vitarc.obj_idx_utils"),
        data=_load_file(checkout, "data.beforearc_data"),
        losses=NS(**{name: namespace[name] for name in ("ReconstructionLoss", "RegularizationLoss")}),
    )


def released_canvases(released: NS, grids: np.ndarray, side: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The release's visual-token canvases (B x side x side) of -1-padded grids and their object ids (B x side^2)."""
    dataset = NS(PAD_TOKEN=10, X_ENDGRID_TOKEN=11, Y_ENDGRID_TOKEN=12, XY_ENDGRID_TOKEN=13, NL_GRID_TOKEN=14,
                 max_img_size=side)
    canvases, ids = [], []
    for grid in grids:
        rows, cols = int((grid >= 0).any(axis=1).sum()), int((grid >= 0).any(axis=0).sum())
        canvas = released.data.BEFOREARCDataset.pad_with_2d_visual_tokens(dataset, torch.tensor(grid[:rows, :cols]))
        canvases.append(canvas)
        ids.append(released.data.create_object_grid(canvas, side, {"PAD": 10}))
    return torch.stack(canvases), torch.stack(ids)


def released_model(released: NS, grid_tf: bool, side: int) -> nn.ModuleDict:
    """BEFOREARCModel's encoder, decoder and task embedding for Grid-TF or PL-TF, as it builds them."""
    if grid_tf:
        encoder = released.vit.VisionTransformer(BASE_CONFIG, _model_config(True), VIT_CONFIG, side, 1, CLASSES)
        width = VIT_CONFIG.embed_dim
    else:
        encoder = released.looped.LoopedVisionTransformer(BASE_CONFIG, _model_config(False), LOOPED_CONFIG, side, 1,
                                                          CLASSES)
        width = LOOPED_CONFIG.embed_dim
    decoder = released.mlp.get_mlp_head(HEAD_CONFIG, width, CLASSES, activation="relu", num_layers=2)
    embedding = nn.Embedding(CLASSES + TASK_IDS, width)
    return nn.ModuleDict({"encoder": encoder, "decoder": decoder, "embed_task_tokens_seq": embedding})


def seed_weights(model: nn.ModuleDict, prefix: str, arrays: dict[str, np.ndarray]) -> None:
    """Every trainable tensor of `model` (a shared one under its first name: the patch embedding, which the APE
    also holds) from `released_weights`; names, shapes and digest into `arrays`."""
    state: dict[str, torch.Tensor] = {}
    for name, value in model.state_dict(keep_vars=True).items():
        fixed = isinstance(value, nn.Parameter) and not value.requires_grad
        if not fixed and all(value is not kept for kept in state.values()):
            state[name] = value
    weights = released_weights({name: tuple(value.shape) for name, value in state.items()}, SEED)
    with torch.no_grad():
        for name, value in state.items():
            value.copy_(weights[name])
    arrays[f"{prefix}_names"] = np.array(list(state))
    arrays[f"{prefix}_shapes"] = np.array([",".join(map(str, value.shape)) for value in state.values()])
    arrays[f"{prefix}_sha256"] = np.array(weights_digest(weights))


def main(checkout: Path) -> None:
    released = import_released(checkout.resolve())
    side = GRID_SIZE + 2
    grids, targets = fixture_grids()
    inputs, ids = released_canvases(released, grids, side)
    target_canvases, _ = released_canvases(released, targets, side)
    tokens = torch.tensor(TASK_TOKENS)
    extra = ids_grids()
    extra_canvases, extra_ids = released_canvases(released, extra, IDS_GRID_SIZE + 2)
    arrays: dict[str, np.ndarray] = {
        "seed": np.array(SEED), "halting_seed": np.array(HALTING_SEED), "grid_size": np.array(GRID_SIZE),
        "grids": grids, "targets": targets, "vt_inputs": inputs.numpy(), "vt_targets": target_canvases.numpy(),
        "object_ids": ids.numpy(), "task_tokens": tokens.numpy(), "ids_grids": extra.astype(np.int8),
        "ids_canvases": extra_canvases.numpy().astype(np.int8), "ids_release": extra_ids.numpy().astype(np.int16),
    }

    torch.manual_seed(SEED)
    grid_tf = released_model(released, True, side)
    seed_weights(grid_tf, "gridtf", arrays)
    grid_tf.eval()
    with torch.no_grad():
        features = grid_tf["encoder"](inputs, grid_tf["embed_task_tokens_seq"](tokens), None, ids)
        arrays["gridtf_eval"] = grid_tf["decoder"](features).numpy()

    torch.manual_seed(SEED)
    looped = released_model(released, False, side)
    seed_weights(looped, "pltf", arrays)
    for module in looped.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    halting: list[torch.Tensor] = []
    looped["encoder"].halting_mlp.register_forward_hook(lambda module, args, out: halting.append(out.squeeze(-1)))
    with torch.no_grad():
        features, p_list, _ = looped.train()["encoder"](inputs, looped["embed_task_tokens_seq"](tokens), None, None)
        logits = [looped["decoder"](feature) for feature in features]
        reconstruction = released.losses.ReconstructionLoss(F.cross_entropy)(p_list, logits, target_canvases.flatten(1))
        prior = released.losses.RegularizationLoss(PONDERNET.lambda_p, PONDERNET.max_steps)
        arrays["pltf_loss"] = (reconstruction + PONDERNET.beta * prior(p_list)).numpy()
        arrays["pltf_prior"] = prior.p_g.numpy()
        arrays["pltf_step_logits"] = torch.stack(logits).numpy()
        arrays["pltf_halting"] = torch.stack(halting).numpy()
        arrays["pltf_distribution"] = torch.stack(p_list).numpy()
        torch.manual_seed(HALTING_SEED)
        features, _, halt_step = looped.eval()["encoder"](inputs, looped["embed_task_tokens_seq"](tokens), None, None)
        steps = torch.stack([looped["decoder"](feature) for feature in features], dim=1)
        arrays["pltf_halt_step"] = halt_step.numpy()
        arrays["pltf_halt_logits"] = steps[torch.arange(len(halt_step)), halt_step].numpy()
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB): {len(p_list)} training steps, halting steps "
          f"{halt_step.tolist()}")


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit(__doc__)
    default = os.environ.get("VISUALREASONING_DIR") or ROOT.parent / "visualreasoning"
    main(Path(sys.argv[1] if len(sys.argv) == 2 else default))

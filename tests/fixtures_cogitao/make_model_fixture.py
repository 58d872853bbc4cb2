"""Make tests/data/cogitao_models_differential.npz: COGITAO's released ResNet and Vanilla-TF run on fixed grids.

Run from the project root with a checkout of COGITAO's model code (ktroyan/visualreasoning at f84f79d) beside the
project, or named by the argument or by VISUALREASONING_DIR:

    python tests/fixtures_cogitao/make_model_fixture.py [../visualreasoning]

The released modules are loaded from the checkout's files, never copied: `networks/backbones/resnet.py`
(`CustomResNet`), `networks/backbones/vit.py` (`VisionTransformer`), `networks/heads/mlp.py` (`get_mlp_head`) and
`utility/rearc/utils.py` (`one_hot_encode`), each by its path, so that `networks/__init__.py` (which imports every
backbone and their packages) does not run. Stand-ins replace what these files import but the code run here does
not use: the checkout's `utility.custom_logging` (its import reads ./configs/base.yaml and opens log files) by a
plain logger, `utility.utils` (plotting) by a no-op `plot_absolute_positional_embeddings`, and the packages
`einops`, `rotary_embedding_torch` and `seaborn` when they are not installed (only other classes call them).

Each model is assembled as `models/beforearc_model.py` `BEFOREARCModel` assembles it, with SimpleNamespace
stand-ins for its configs at the paper's settings (`RESNET_CONFIG`, `VIT_CONFIG`, `VIT_MODEL_CONFIG`): `encoder`
(the backbone), `decoder` (the MLP head, 2 layers, hidden 128, ReLU) and `embed_task_tokens_seq`
(`nn.Embedding(11 + 21, 128)`), the CompGen setting with task tokens, on a canvas of CANVAS x CANVAS cells (the
paper's are 15-20; only the number of positions differs) and at the real widths and depths. The forward is
`BEFOREARCModel.forward`'s: the task tokens embedded, the encoder, the head on every token, and for the ResNet the
task-token logits cut off (`beforearc_model.py:1039-1050`).

The weights are `released_weights`: every tensor of the released state dict (BatchNorm statistics included; the
ViT's patch embedding, which its positional encoding also holds, once) drawn from numpy's frozen RandomState
seeded by its name, so that the test re-creates them exactly and the fixture stays small (the two models hold 2.6
million numbers, 10 MB of float32): matrices and kernels with standard deviation 1/sqrt(fan-in), everything else
N(0, 1) (the learned positions and the task table as released), BatchNorm variances in [0.5, 1.5]. Seeded rather
than released initialisation: that one has zero biases, identity norms and BatchNorm statistics of 0 and 1, which
would hide a misplaced bias or norm.

The fixture holds the inputs (`grids`: B x CANVAS x CANVAS classes, padded with 10 right and bottom as COGITAO
pads; `task_tokens`: B x 4 released token ids, identity = 11), per model the released names and shapes
(`<model>_names`, `<model>_shapes`), a SHA-256 of the weights (`<model>_sha256`), and the logits of every cell
(B x CANVAS^2 x 11, row-major): in eval mode (`<model>_eval`, dropout off, BatchNorm's running statistics) and for
the ResNet also in training mode (`resnet_train`, BatchNorm's batch statistics). tests/test_cogitao_released_models.py
loads the weights into the project's models and checks them against it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import types
import zlib
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "cogitao_models_differential.npz"
SEED = 0
CANVAS = 6
CLASSES = 11  # 10 colours + PAD, without visual tokens
TASK_IDS = 21  # identity + 20 transformations
GRIDS = [  # (rows, columns) of each input grid, placed top-left on the canvas
    (6, 6), (4, 5), (2, 3),
]
TASK_TOKENS = [[12, 20, 11, 11], [31, 15, 27, 13], [11, 11, 11, 11]]  # released ids, identity (11) pads
BASE_CONFIG = NS(data_env="BEFOREARC")
HEAD_CONFIG = NS(embed_dim=128, hidden_dim=128, activation="relu")  # configs/networks/heads/mlp.yaml
TASK_EMBEDDING = NS(enabled=True, approach="task_tokens")
RESNET_CONFIG = NS(name="resnet", network_size=None, embed_dim=128)  # configs/networks/backbones/resnet.yaml
VIT_CONFIG = NS(  # vit.yaml as of c1bb341 (the paper's 128 / 4 heads / 6 layers), the Vanilla-TF command's flags
    embed_dim=128, num_heads=4, mlp_ratio=4, qkv_bias=True, num_layers=6, ape_dropout_rate=0.0,
    attn_dropout_rate=0.1, attn_proj_dropout_rate=0.0, ff_dropout_rate=0.1,
    init_weights_cfg=NS(type="trunc_normal", distribution="uniform"),
)
VIT_MODEL_CONFIG = NS(
    patch_size=1, use_ohe_repr=True, use_cls_token=False, num_reg_tokens=0, num_elementary_tasks=TASK_IDS,
    task_embedding=TASK_EMBEDDING, ape=NS(enabled=True, ape_type="learn", mixer="sum"), ope=NS(enabled=False),
    rpe=NS(enabled=False, rpe_type=None), attention_map=NS(enabled=False), encoder_aggregation=NS(enabled=False),
)
N01 = ("encoder.ape.static_ape", "embed_task_tokens_seq.weight")
"""Tensors COGITAO draws N(0, 1) (`torch.randn`, `nn.Embedding`): seeded at that scale."""


def released_weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, torch.Tensor]:
    """Values for every tensor of a released state dict (name -> shape), each from RandomState(crc32(seed:name))."""
    weights = {}
    for name, shape in shapes.items():
        if name.endswith("num_batches_tracked"):
            weights[name] = torch.zeros(shape, dtype=torch.long)
            continue
        random = np.random.RandomState(zlib.crc32(f"{seed}:{name}".encode()))
        if name.endswith("running_var"):
            values = 0.5 + random.random_sample(shape)
        else:
            scale = np.prod(shape[1:]) ** -0.5 if len(shape) > 1 and name not in N01 else 1.0
            values = random.standard_normal(shape) * scale
        weights[name] = torch.from_numpy(np.asarray(values, dtype=np.float32))
    return weights


def weights_digest(weights: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the names and bytes of `weights`, in name order."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        digest.update(name.encode())
        digest.update(weights[name].contiguous().numpy().tobytes())
    return digest.hexdigest()


def fixture_weights(data: np.lib.npyio.NpzFile, kind: str, generator: str) -> dict[str, torch.Tensor]:
    """The released model `kind`'s seeded weights, re-created from a fixture's names, shapes and seed and checked
    against its digest; `generator` names the script that made the fixture, for the message when they differ."""
    shapes = {name: tuple(int(size) for size in shape.split(",") if size)
              for name, shape in zip(data[f"{kind}_names"], data[f"{kind}_shapes"])}
    weights = released_weights(shapes, int(data["seed"]))
    assert weights_digest(weights) == str(data[f"{kind}_sha256"]), (
        f"released_weights no longer draws the fixture's weights; re-run tests/fixtures_cogitao/{generator}"
    )
    return weights


def fixture_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """The grids on the canvas (B, CANVAS, CANVAS), colours from a fixed seed and 10 beyond each grid, and the
    task tokens (B, 4)."""
    random = np.random.RandomState(SEED)
    canvas = np.full((len(GRIDS), CANVAS, CANVAS), CLASSES - 1, dtype=np.int64)
    for index, (rows, columns) in enumerate(GRIDS):
        canvas[index, :rows, :columns] = random.randint(0, 10, (rows, columns))
    return torch.from_numpy(canvas), torch.tensor(TASK_TOKENS)


def _load_file(checkout: Path, dotted: str) -> types.ModuleType:
    """The module `dotted` executed from its file in the checkout, registered under its name."""
    spec = importlib.util.spec_from_file_location(dotted, checkout / (dotted.replace(".", "/") + ".py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = module
    spec.loader.exec_module(module)
    return module


def _stand_in(name: str, **attributes: object) -> None:
    module = types.ModuleType(name)
    module.__path__ = []  # type: ignore[attr-defined]  # a package, so that submodules can be registered
    for key, value in attributes.items():
        setattr(module, key, value)
    sys.modules[name] = module


def import_released(checkout: Path) -> NS:
    """COGITAO's resnet, vit and mlp modules, loaded from the checkout's files (module docstring); no bytecode is
    written into the checkout."""
    sys.dont_write_bytecode = True
    for package in ("utility", "utility.rearc", "networks", "networks.backbones", "networks.heads"):
        _stand_in(package)
    _stand_in("utility.custom_logging", logger=logging.getLogger("visualreasoning"))
    _stand_in("utility.utils", plot_absolute_positional_embeddings=lambda *args, **kwargs: None)
    for package in ("einops", "rotary_embedding_torch", "seaborn"):
        if importlib.util.find_spec(package) is None:
            _stand_in(package)
            sys.modules[package].__getattr__ = _unused(package)  # type: ignore[attr-defined]
    _load_file(checkout, "utility.rearc.utils")
    return NS(
        resnet=_load_file(checkout, "networks.backbones.resnet"),
        vit=_load_file(checkout, "networks.backbones.vit"),
        mlp=_load_file(checkout, "networks.heads.mlp"),
    )


def _unused(package: str):  # noqa: ANN202
    def attribute(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)

        def fail(*args: object, **kwargs: object) -> None:
            raise RuntimeError(f"{package}.{name} is a stand-in: the fixture's models should not call it")

        return fail

    return attribute


def released_model(released: NS, kind: str) -> nn.ModuleDict:
    """BEFOREARCModel's encoder, decoder and task embedding for `kind` (resnet or vit), as it builds them."""
    if kind == "resnet":
        model_config = NS(task_embedding=TASK_EMBEDDING)
        encoder = released.resnet.CustomResNet(BASE_CONFIG, model_config, RESNET_CONFIG, CANVAS, CLASSES)
    else:
        encoder = released.vit.VisionTransformer(BASE_CONFIG, VIT_MODEL_CONFIG, VIT_CONFIG, CANVAS, 1, CLASSES)
    decoder = released.mlp.get_mlp_head(HEAD_CONFIG, 128, CLASSES, activation="relu", num_layers=2)
    embedding = nn.Embedding(CLASSES + TASK_IDS, 128)
    return nn.ModuleDict({"encoder": encoder, "decoder": decoder, "embed_task_tokens_seq": embedding})


def released_forward(model: nn.ModuleDict, kind: str, grids: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """`BEFOREARCModel.forward` with the mlp head: (B, CANVAS^2, CLASSES) logits."""
    task = model["embed_task_tokens_seq"](tokens)
    if kind == "resnet":
        logits = model["decoder"](model["encoder"](grids, task, None))
        return logits[:, :-task.shape[1], :]  # the task tokens' logits are discarded
    return model["decoder"](model["encoder"](grids, task, None, None))


def main(checkout: Path) -> None:
    released = import_released(checkout.resolve())
    grids, tokens = fixture_inputs()
    arrays: dict[str, np.ndarray] = {"seed": np.array(SEED), "grids": grids.numpy(), "task_tokens": tokens.numpy()}
    for kind in ("resnet", "vit"):
        torch.manual_seed(SEED)
        model = released_model(released, kind)
        state = dict(model.named_parameters()) | dict(model.named_buffers())  # a shared tensor under its first name
        weights = released_weights({name: tuple(value.shape) for name, value in state.items()}, SEED)
        with torch.no_grad():
            for name, value in state.items():
                value.copy_(weights[name])
        with torch.no_grad():
            arrays[f"{kind}_eval"] = released_forward(model.eval(), kind, grids, tokens).numpy()
            if kind == "resnet":
                arrays["resnet_train"] = released_forward(model.train(), kind, grids, tokens).numpy()
        arrays[f"{kind}_names"] = np.array(list(state))
        arrays[f"{kind}_shapes"] = np.array([",".join(map(str, value.shape)) for value in state.values()])
        arrays[f"{kind}_sha256"] = np.array(weights_digest(weights))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit(__doc__)
    default = os.environ.get("VISUALREASONING_DIR") or ROOT.parent / "visualreasoning"
    main(Path(sys.argv[1] if len(sys.argv) == 2 else default))

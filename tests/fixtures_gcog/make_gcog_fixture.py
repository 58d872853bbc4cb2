"""Make tests/data/gcog_differential.npz: gCOG's six released models run on fixed tokens with seeded weights.

Run from the project root with a checkout of gCOG's code (IBM/gcog at afba7f0, e.g.
`git -C <mirror> archive HEAD | tar -x -C /tmp/gcog`), named by the argument or by GCOG_DIR (default /tmp/gcog):

    python tests/fixtures_gcog/make_gcog_fixture.py [/tmp/gcog]

The released modules are imported from the checkout, never copied: `gcog/models/rnn.py` (`RNN`, `GRU`) and
`gcog/models/transformer.py` (`MultimodalTransformer` = SSTfmr, `Transformer` = DSTfmr, `SimpleCrossAttn` =
CrossAttn, `Perceiver`). They import only torch, numpy and `gcog/task/config.py` (plain constants), so nothing is
stood in. Each is built at the paper's widths (`num_hidden` 512, the Perceiver's 256; `embedding_dim` 256, one
head, one block) for gCOG's 10 x 10 grid, reading the project's token features: a rule token [task-code id, EOS]
(`num_rule_inputs` 2), a stimulus token [cell class, EOS] (`num_stim_inputs` 2; the recurrent models read the
101 tokens flattened, 202).

Inputs are built as the release's dataset builds them (`gcog/task/dataset_generator.py:55-61,206-209`: zero-pad a
feature column and a token, then the EOS flag on the last token's last feature) from fixed task codes and grids.
Every tensor of each released model is drawn from numpy's RandomState seeded by the model and the tensor's name
(`seeded_weights`, which the test re-creates): matrices with standard deviation 1/sqrt(fan-in), vectors
N(0, 0.5^2), so no bias is zero and no LayerNorm the identity. The fixture holds the inputs, per model the
released names and shapes of the tensors the encoder shares (everything but the 138-way `w_out`), their count, and
the readout: the input of `w_out`'s Linear (the Perceiver's last latent), captured by a forward hook in eval mode.
tests/test_gcog_released_models.py loads the weights into the project's encoders and compares the readouts.
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "gcog_differential.npz"
BATCH = 3
CODE_LENGTH = 4
GRID = 10
VOCAB = 101
MODELS = ("rnn", "gru", "sst", "dst", "crossattn", "perceiver")


def seeded_weights(model: str, shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """Values for every tensor (name -> shape) of a released model, each from RandomState(crc32(model:name))."""
    weights = {}
    for name, shape in shapes.items():
        random = np.random.RandomState(zlib.crc32(f"{model}:{name}".encode()))
        scale = float(np.prod(shape[1:])) ** -0.5 if len(shape) > 1 else 0.5
        weights[name] = torch.from_numpy(np.asarray(random.standard_normal(shape) * scale, dtype=np.float32))
    return weights


def inputs() -> dict[str, np.ndarray]:
    """Task codes (B, L) and grids (B, G, G), and their tokens as the release's dataset lays them out."""
    random = np.random.RandomState(0)
    codes = random.randint(1, VOCAB, size=(BATCH, CODE_LENGTH))
    codes[0, 3] = 0  # padding, as a short rule's code holds
    grids = np.where(random.random_sample((BATCH, GRID, GRID)) < 0.7, 0, random.randint(1, 11, (BATCH, GRID, GRID)))
    rules = np.pad(codes[:, :, None].astype(np.float32), ((0, 0), (0, 1), (0, 1)))
    rules[:, -1, -1] = 1.0
    stimulus = np.pad(grids.reshape(BATCH, GRID * GRID, 1).astype(np.float32), ((0, 0), (0, 1), (0, 1)))
    stimulus[:, -1, -1] = 1.0
    return {"codes": codes, "grids": grids, "rules": rules, "stimulus": stimulus}


def released_models() -> dict[str, torch.nn.Module]:
    from gcog.models import rnn, transformer

    tokens = GRID * GRID + 1
    return {
        "rnn": rnn.RNN(num_rule_inputs=2, num_stim_inputs=2 * tokens, num_hidden=512),
        "gru": rnn.GRU(num_rule_inputs=2, num_stim_inputs=2 * tokens, num_hidden=512),
        "sst": transformer.MultimodalTransformer(num_rule_inputs=2, num_stim_inputs=2, num_hidden=512),
        "dst": transformer.Transformer(num_rule_inputs=2, num_stim_inputs=2, num_hidden=512),
        "crossattn": transformer.SimpleCrossAttn(num_rule_inputs=2, num_stim_inputs=2, num_hidden=512),
        "perceiver": transformer.Perceiver(num_rule_inputs=2, num_stim_inputs=2, num_hidden=256),
    }


def readout(model: torch.nn.Module, rules: torch.Tensor, stimulus: torch.Tensor) -> np.ndarray:
    """The input of the model's 138-way Linear, (B, H): the last latent for the Perceiver (it reads them all)."""
    seen: list[torch.Tensor] = []
    hook = model.w_out[0].register_forward_hook(lambda _module, args, _out: seen.append(args[0]))
    with torch.no_grad():
        model(rules, stimulus[..., None])
    hook.remove()
    value = seen[0]
    return (value[:, -1] if value.ndim == 3 else value).numpy()


def main(checkout: str) -> None:
    sys.path.insert(0, checkout)
    torch.manual_seed(0)
    data = inputs()
    rules, stimulus = torch.from_numpy(data["rules"]), torch.from_numpy(data["stimulus"])
    out: dict[str, np.ndarray] = dict(data)
    for name, model in released_models().items():
        shapes = {key: tuple(value.shape) for key, value in model.named_parameters()}
        model.load_state_dict(seeded_weights(name, shapes), strict=False)  # the parameters; `pe` is a fixed buffer
        model.eval()
        shared = [key for key in shapes if not key.startswith("w_out.")]
        out[f"{name}_names"] = np.array(shared)
        out[f"{name}_shapes"] = np.array([",".join(map(str, shapes[key])) for key in shared])
        out[f"{name}_parameters"] = np.array(sum(int(np.prod(shapes[key])) for key in shared))
        out[f"{name}_readout"] = readout(model, rules, stimulus)
        print(name, out[f"{name}_parameters"], out[f"{name}_readout"].shape)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GCOG_DIR", "/tmp/gcog"))

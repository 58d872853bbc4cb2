"""Make tests/data/carc_mlc_differential.npz: C-ARC's released MLC model run on episodes of the project's generator.

Run from the project root with a checkout of C-ARC's code (mainlp/C-ARC) named by the argument or by CARC_DIR
(e.g. `git -C <mirror> worktree add /tmp/carc HEAD`):

    python tests/fixtures_carc/make_mlc_fixture.py [/tmp/carc]

The released code is imported from the checkout, never copied: `vmlc/data_prep/dataset.py` (`VisualGrammarDataset`:
the episode file read back, the copy task's queries), `vmlc/data_prep/datamodule.py` (`LitDataModule.
make_batch_from_episodes`: the token sequences), `vmlc/data_prep/patch_tokenizer.py` and `vmlc/model/model.py`
(`LitModel`: `SeqToSeqTransformer`, its positions and its weighted loss) built as `scripts/train_mlc.py` builds them
(width 128, 8 heads, 3 + 3 layers, `ff_mult` 6, GELU, dropout 0.0, zero-patch weight 0.2) for the Systematicity
setup's 12 study examples. `pytorch_lightning` is not needed by the code run here and is stood in for when it is
not installed (a `LightningModule` that is an `nn.Module` whose `save_hyperparameters` does nothing).

Episodes: one Systematicity episode (12 study examples) and one 3-Shot episode, each with `QUERIES` queries, from
`vision_bench.tasks.carc.episodes.generate_episode` with `random.Random(SEED)`, written as the released episode file
(`{"study_examples": [[in, out], ...], "queries": [...]}`, one line each) and read by `VisualGrammarDataset` with
the copy task (each episode's queries are its study examples, then its own). The model reads both episodes with the
same weights (the 3-Shot sequence uses the first 182 of the 650 positions).

The weights are `released_weights`: every tensor of the released state dict drawn from numpy's frozen RandomState
seeded by its name, so that the test re-creates them exactly and the fixture stays small (5.7 million numbers):
matrices with standard deviation 1/sqrt(fan-in), the embedding tables and positions N(0, 1) as released, vectors
(biases, norms) 0.1 N(0, 1), plus 1 for the norms' weights: seeded rather than released initialisation, whose zero
biases and unit norms would hide a misplaced bias or norm.

The fixture holds, per setup (`sys`, `shot`): the episodes' grids (`<setup>_study_in`, `_study_out`: n x 10 x 10,
`_query_in`, `_query_out`: QUERIES x 10 x 10), the released tokens (`_episode`: N x L, `_sos`, `_eos`: N x 26, N =
n + QUERIES sequences, the copy task's first), the teacher-forced logits at `COLUMNS` (`_logits`: N x 26 x 64), the
log-probability of every target token (`_target_logp`), the argmax tokens (`_argmax`), the released weighted loss
(`_loss`), and the greedy decoding from SOS through the released `encode` / `decode` (`_greedy`: N x 25 tokens); and
the weights' SHA-256 (`sha256`). tests/test_carc_mlc_released.py checks the project's tokens and model against it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import tempfile
import types
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "carc_mlc_differential.npz"
SEED = 1860
QUERIES = 2
STUDY_EXAMPLES = 12
COLUMNS = np.arange(0, 10005, 157)[:64]
"""The vocabulary columns whose logits the fixture keeps (the specials 0 and a spread of patches)."""
N01 = ("positional_encoding.positional_1d.pos_embedding", "positional_encoding.row_embed",
       "positional_encoding.col_embed", "input_embedding.weight", "output_embedding.weight")
"""Tensors the released code draws N(0, 1) (`torch.randn`, `nn.Embedding`)."""
SETUPS = {"sys": "systematicity", "shot": "3shot"}


def released_weights(shapes: dict[str, tuple[int, ...]], seed: int = SEED) -> dict[str, torch.Tensor]:
    """Values for every tensor of a released state dict (name -> shape), each from RandomState(crc32(seed:name))."""
    weights = {}
    for name, shape in shapes.items():
        random_state = np.random.RandomState(zlib.crc32(f"{seed}:{name}".encode()))
        values = random_state.standard_normal(shape)
        if name in N01:
            pass
        elif len(shape) > 1:
            values = values * shape[1] ** -0.5
        else:
            values = 0.1 * values + (1.0 if "norm" in name and name.endswith("weight") else 0.0)
        weights[name] = torch.from_numpy(np.asarray(values, dtype=np.float32))
    return weights


def weights_digest(weights: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the names and bytes of `weights`, in name order."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        digest.update(name.encode())
        digest.update(weights[name].contiguous().numpy().tobytes())
    return digest.hexdigest()


def _stand_in_lightning() -> None:
    try:
        import pytorch_lightning  # noqa: F401
    except ImportError:
        module = types.ModuleType("pytorch_lightning")

        class LightningModule(nn.Module):
            def save_hyperparameters(self) -> None:
                pass

        module.LightningModule = LightningModule  # type: ignore[attr-defined]
        module.LightningDataModule = object  # type: ignore[attr-defined]
        sys.modules["pytorch_lightning"] = module


def _episodes(setup: str) -> list[dict]:
    from vision_bench.tasks.carc.episodes import generate_episode
    from vision_bench.tasks.carc.spec import EpisodeSpec

    compositions = EpisodeSpec(setup=setup).compositions("train")  # type: ignore[arg-type]
    episode = generate_episode(setup, compositions, QUERIES, random.Random(SEED))
    pairs = [[example.input.tolist(), example.output.tolist()] for example in episode.study]
    queries = [[example.input.tolist(), example.output.tolist()] for example in episode.queries]
    return [{"study_examples": pairs, "queries": queries}]


def main(checkout: Path) -> None:
    sys.path.insert(0, str(checkout))
    sys.path.insert(0, str(ROOT))
    _stand_in_lightning()
    from vmlc.data_prep.datamodule import LitDataModule
    from vmlc.data_prep.dataset import VisualGrammarDataset
    from vmlc.data_prep.patch_tokenizer import PatchTokenizer
    from vmlc.model.model import LitModel

    tokenizer = PatchTokenizer(patch_size=2, max_value=9, grid_size=10)
    model = LitModel(hidden_size=128, output_size=tokenizer.vocab_size, PAD_idx_input=tokenizer.PAD_idx,
                     PAD_idx_output=tokenizer.PAD_idx, nlayers_encoder=3, nlayers_decoder=3, ff_mult=6,
                     dropout_p=0.0, activation="gelu", grid_size=(10, 10), patch_size=(2, 2),
                     num_support=STUDY_EXAMPLES, all_zero_token_idx=tokenizer.zero_token_id, zero_token_weight=0.2)
    state = model.model.state_dict()
    weights = released_weights({name: tuple(tensor.shape) for name, tensor in state.items()})
    model.model.load_state_dict(weights)
    model.eval()
    data = LitDataModule(data_dir="", data_file_name="", tokenizer=tokenizer)
    arrays: dict[str, np.ndarray] = {"sha256": np.array(weights_digest(weights)), "columns": COLUMNS}
    with tempfile.TemporaryDirectory() as folder, torch.no_grad():
        for key, setup in SETUPS.items():
            with open(os.path.join(folder, f"val_{key}.jsonl"), "w") as handle:
                handle.writelines(json.dumps(episode) + "\n" for episode in _episodes(setup))
            dataset = VisualGrammarDataset(data_dir=folder, data_file_name=key, mode="val", with_copy_task=True)
            sample = dataset[0]
            batch = data.make_batch_from_episodes([sample])
            logits = model(batch)
            target = batch["yq_eos"]
            loss = model.loss_fn(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
            memory = model.model.encode(batch)
            tokens = torch.full((target.shape[0], 1), tokenizer.token_to_id["SOS"])
            for _ in range(25):
                step = model.model.decode(tokens, memory)[:, -1].argmax(dim=-1, keepdim=True)
                tokens = torch.cat([tokens, step], dim=1)
            study = len(sample["xs"])
            arrays.update({
                f"{key}_study_in": np.stack(sample["xs"]).astype(np.uint8),
                f"{key}_study_out": np.stack(sample["ys"]).astype(np.uint8),
                f"{key}_query_in": np.stack(sample["xq"][study:]).astype(np.uint8),
                f"{key}_query_out": np.stack(sample["yq"][study:]).astype(np.uint8),
                f"{key}_episode": batch["xq_context"].numpy().astype(np.int16),
                f"{key}_sos": batch["yq_sos"].numpy().astype(np.int16),
                f"{key}_eos": target.numpy().astype(np.int16),
                f"{key}_logits": logits[..., COLUMNS].numpy(),
                f"{key}_target_logp": logits.log_softmax(-1).gather(-1, target[..., None])[..., 0].numpy(),
                f"{key}_argmax": logits.argmax(-1).numpy().astype(np.int16),
                f"{key}_loss": np.array(loss.item(), dtype=np.float64),
                f"{key}_greedy": tokens[:, 1:].numpy().astype(np.int16),
            })
    np.savez_compressed(OUT, **arrays)  # type: ignore[arg-type]
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARC_DIR", "/tmp/carc")))

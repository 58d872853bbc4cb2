"""carc:mlc against C-ARC's released code (tests/data/carc_mlc_differential.npz, made by
tests/fixtures_carc/make_mlc_fixture.py from mainlp/C-ARC): the released tokens of a Systematicity and a 3-Shot
episode with the copy task, and, with the same seeded weights, the released logits, loss and greedy decoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_carc.make_mlc_fixture import released_weights, weights_digest

from vision_bench.models.carc_mlc.network import EpisodeTransformer, Sizes
from vision_bench.models.carc_mlc.objective import episode_loss
from vision_bench.models.carc_mlc.tokens import decoder_input, decoder_target, episode_sequence

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "data" / "carc_mlc_differential.npz"
SETUPS = ("sys", "shot")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def fixture() -> dict[str, np.ndarray]:
    with np.load(FIXTURE) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def model(fixture: dict[str, np.ndarray]) -> EpisodeTransformer:
    torch.manual_seed(0)
    network = EpisodeTransformer(Sizes())
    weights = released_weights({name: tuple(value.shape) for name, value in network.state_dict().items()})
    assert weights_digest(weights) == str(fixture["sha256"])
    network.load_state_dict(weights, strict=True)
    return network.eval()


def tokens(fixture: dict[str, np.ndarray], key: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The project's (episode, SOS + output, output + EOS) tokens of the fixture's queries: the copy task's first."""
    study_in, study_out = (torch.from_numpy(fixture[f"{key}_study_{side}"]).long() for side in ("in", "out"))
    queries = torch.cat([study_in, torch.from_numpy(fixture[f"{key}_query_in"]).long()])
    answers = torch.cat([study_out, torch.from_numpy(fixture[f"{key}_query_out"]).long()])
    count = len(queries)
    episode = episode_sequence(study_in.expand(count, -1, -1, -1), study_out.expand(count, -1, -1, -1), queries)
    return episode, decoder_input(answers), decoder_target(answers)


def test_the_parameter_count_is_the_released_models(model: EpisodeTransformer) -> None:
    """The released `SeqToSeqTransformer` at `train_mlc.py`'s sizes with 12 study examples has 5,720,213 parameters
    (the paper's 5.7M): the fixture's weight digest covers the released names and shapes, which the project's
    state dict reproduces; with 3 study examples (3-Shot) 5,660,309."""
    assert sum(p.numel() for p in model.parameters()) == 5_720_213
    assert sum(p.numel() for p in EpisodeTransformer(Sizes(study_examples=3)).parameters()) == 5_660_309


@pytest.mark.parametrize("key", SETUPS)
def test_the_episode_serialises_to_the_released_tokens(fixture: dict[str, np.ndarray], key: str) -> None:
    episode, sos, eos = tokens(fixture, key)
    assert torch.equal(episode, torch.from_numpy(fixture[f"{key}_episode"]).long())
    assert torch.equal(sos, torch.from_numpy(fixture[f"{key}_sos"]).long())
    assert torch.equal(eos, torch.from_numpy(fixture[f"{key}_eos"]).long())


def outputs(model: EpisodeTransformer, fixture: dict[str, np.ndarray], key: str) -> dict[str, torch.Tensor]:
    """The teacher-forced logits at the fixture's columns, the target tokens' log-probabilities, the argmax and the
    loss, at the released zero-patch weight 0.2."""
    episode, sos, eos = tokens(fixture, key)
    with torch.no_grad():
        logits = model(episode, sos)
    return {"logits": logits[..., torch.from_numpy(fixture["columns"])],
            "target_logp": logits.log_softmax(-1).gather(-1, eos[..., None])[..., 0],
            "argmax": logits.argmax(-1), "loss": episode_loss(logits, eos, 0.2)}


@pytest.mark.parametrize("key", SETUPS)
def test_with_the_released_weights_the_model_gives_the_released_logits_loss_and_decoding(
        model: EpisodeTransformer, fixture: dict[str, np.ndarray], key: str) -> None:
    got = outputs(model, fixture, key)
    for name in ("logits", "target_logp"):
        assert torch.allclose(got[name], torch.from_numpy(fixture[f"{key}_{name}"]), atol=TOLERANCE, rtol=0), name
    assert abs(got["loss"].item() - float(fixture[f"{key}_loss"])) < TOLERANCE
    assert torch.equal(got["argmax"], torch.from_numpy(fixture[f"{key}_argmax"]).long())
    greedy = model.greedy(tokens(fixture, key)[0])[0]
    assert torch.equal(greedy, torch.from_numpy(fixture[f"{key}_greedy"]).long())


@pytest.mark.parametrize("first, second", [
    ("positional_encoding.row_embed", "positional_encoding.col_embed"),
    ("transformer.encoder.layers.0.linear1.weight", "transformer.encoder.layers.1.linear1.weight"),
    ("transformer.decoder.layers.2.multihead_attn.in_proj_weight",
     "transformer.decoder.layers.2.self_attn.in_proj_weight"),
])
def test_swapping_two_weight_tensors_breaks_the_match(model: EpisodeTransformer, fixture: dict[str, np.ndarray],
                                                      first: str, second: str) -> None:
    swapped = EpisodeTransformer(Sizes()).eval()
    state = {name: value.clone() for name, value in model.state_dict().items()}
    state[first], state[second] = state[second], state[first]
    swapped.load_state_dict(state)
    got = outputs(swapped, fixture, "sys")["logits"]
    assert (got - torch.from_numpy(fixture["sys_logits"])).abs().max() > 100 * TOLERANCE

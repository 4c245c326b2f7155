"""Stream-level baselines (BiLSTM, SWNU, Seq-Sig-Net) and their log-signature helpers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tempoformer.models.bilstm import BiLSTM
from tempoformer.models.seqsignet import SeqSigNet
from tempoformer.models.signature import (
    expanding_log_signatures,
    log_signature_dim,
    path_log_signature,
)
from tempoformer.models.swnu import SWNU

D = 384  # SBERT all-MiniLM-L6-v2 embedding size, as the training code passes

# pysiglib copies view tensors (e.g. autograd's gradients) before use and says so once.
pytestmark = pytest.mark.filterwarnings("ignore:Detected a non-contiguous:UserWarning")


# --- log-signature helpers -------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3])
def test_expanding_log_signatures_equal_per_prefix_log_signatures(depth):
    torch.manual_seed(0)
    path = torch.randn(3, 7, 4, dtype=torch.float64)
    expanding = expanding_log_signatures(path, depth)
    assert expanding.shape == (3, 7, log_signature_dim(4, depth))
    for t in range(7):
        direct = path_log_signature(path[:, : t + 1], depth)
        torch.testing.assert_close(expanding[:, t], direct, atol=1e-5, rtol=0)
    assert expanding[:, 0].abs().max() == 0  # a single point has a zero log-signature


def test_log_signature_dim_matches_output_width():
    assert log_signature_dim(3, 4) == 32  # Witt's formula: 3 + 3 + 8 + 18
    path = torch.randn(2, 5, 3)
    assert path_log_signature(path, 4).shape == (2, 32)


def test_constant_left_padding_leaves_log_signatures_unchanged():
    torch.manual_seed(1)
    path = torch.randn(2, 5, 3, dtype=torch.float64)
    garbage = 10 * torch.randn(2, 4, 3, dtype=torch.float64)
    padded = torch.cat([garbage, path], dim=1)
    mask = torch.cat([torch.zeros(2, 4, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)], 1)

    expected = path_log_signature(path, 3)
    torch.testing.assert_close(path_log_signature(padded, 3, mask), expected, atol=1e-5, rtol=0)
    # Padding held constant at the first real point, explicitly: same result.
    held = torch.cat([path[:, :1].expand(2, 4, 3), path], dim=1)
    torch.testing.assert_close(path_log_signature(held, 3), expected, atol=1e-5, rtol=0)
    # Without the mask the garbage is part of the path, so the check above can fail.
    assert (path_log_signature(padded, 3) - expected).abs().max() > 1e-2

    streamed = expanding_log_signatures(padded, 3, mask)
    assert streamed[:, :4].abs().max() == 0
    torch.testing.assert_close(
        streamed[:, 4:], expanding_log_signatures(path, 3), atol=1e-5, rtol=0
    )


def test_log_signature_gradients_match_finite_differences():
    torch.manual_seed(2)
    path = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p: path_log_signature(p, 3), (path,))
    assert torch.autograd.gradcheck(lambda p: expanding_log_signatures(p, 3), (path,))


# --- models ----------------------------------------------------------------------------------

MODELS = {
    "bilstm": lambda: BiLSTM(input_dim=D, num_labels=2, hidden_dim=16),
    "swnu": lambda: SWNU(
        input_dim=D, num_labels=2, conv_dim=6, swnu_hidden_dim=10, ffn_hidden_dims=[32, 32]
    ),
    "swnu_lstm_pooling": lambda: SWNU(
        input_dim=D,
        num_labels=2,
        conv_dim=6,
        swnu_hidden_dim=10,
        ffn_hidden_dims=[32, 32],
        pooling="lstm",
    ),
    "seqsignet": lambda: SeqSigNet(
        input_dim=D,
        num_labels=2,
        conv_dim=6,
        swnu_hidden_dim=10,
        lstm_hidden_dim=16,
        ffn_hidden_dims=[32, 32],
    ),
}


def make_windows(lengths: list[int], w: int, seed: int = 0):
    """Left-padded windows as the training code builds them: zeros in padding slots, time =
    log-gap to the current post (decreasing to 0 at the current post)."""
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    mask = torch.zeros(B, w, dtype=torch.bool)
    for i, n in enumerate(lengths):
        mask[i, w - n :] = True
    x = torch.randn(B, w, D, generator=g) * mask[..., None]
    gaps = torch.rand(B, w, generator=g).flip(1).cumsum(1).flip(1) * 3  # decreasing
    time = torch.where(mask, gaps - gaps[:, -1:], torch.zeros(()))
    return x, mask, time


@pytest.mark.parametrize("name", MODELS)
def test_output_shape(name):
    torch.manual_seed(0)
    x, mask, time = make_windows([8, 5, 1], w=8)
    assert MODELS[name]()(x, mask, time).shape == (3, 2)


@pytest.mark.parametrize("name", MODELS)
def test_left_padding_never_changes_logits(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    lengths = [8, 5, 1, 3]
    x, mask, time = make_windows(lengths, w=8)
    with torch.no_grad():
        logits = model(x, mask, time)

        # Four more padding slots, and random garbage in every padding slot's x and time.
        extra = 4
        mask_pad = F.pad(mask, (extra, 0), value=False)
        garbage_x, garbage_time = 5 * torch.randn(4, 12, D), 7 * torch.rand(4, 12)
        x_pad = torch.where(mask_pad[..., None], F.pad(x, (0, 0, extra, 0)), garbage_x)
        time_pad = torch.where(mask_pad, F.pad(time, (extra, 0)), garbage_time)
        torch.testing.assert_close(model(x_pad, mask_pad, time_pad), logits, atol=1e-5, rtol=0)

        # Each stream alone, with no padding at all.
        for i, n in enumerate(lengths):
            alone = model(x[i : i + 1, -n:], mask[i : i + 1, -n:], time[i : i + 1, -n:])
            torch.testing.assert_close(alone[0], logits[i], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", MODELS)
def test_gradients_reach_every_parameter(name):
    torch.manual_seed(0)
    model = MODELS[name]()
    x, mask, time = make_windows([8, 5, 1, 3], w=8)
    F.cross_entropy(model(x, mask, time), torch.tensor([0, 1, 1, 0])).backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", ["swnu", "seqsignet"])
def test_time_enters_the_signature_models(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    x, mask, time = make_windows([8, 6], w=8)
    shifted = time.clone()
    shifted[:, 3] += 2.0  # a real post in both windows, not the previous one
    with torch.no_grad():
        assert (model(x, mask, time) - model(x, mask, shifted)).abs().max() > 1e-6


@pytest.mark.parametrize("name", MODELS)
def test_overfits_sixteen_examples(name):
    torch.manual_seed(0)
    model = MODELS[name]()
    x, mask, time = make_windows([6, 4, 2, 2, 6, 5, 3, 6] * 2, w=6, seed=3)
    # One shared current post: the labels can only be learnt from the history stream.
    x[:, -1] = x[0, -1]
    labels = torch.tensor([0, 1] * 8)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(300):
        optimiser.zero_grad()
        loss = F.cross_entropy(model(x, mask, time), labels)
        loss.backward()
        optimiser.step()
        first = loss.item() if first is None else first
        if loss.item() < 0.2 * first:
            break
    assert loss.item() < 0.2 * first, (first, loss.item())


def test_seqsignet_units_are_anchored_at_the_current_post():
    model = SeqSigNet(
        input_dim=1, num_labels=2, conv_dim=2, swnu_hidden_dim=3, lstm_hidden_dim=4,
        ffn_hidden_dims=[4], unit_size=5, unit_shift=3,
    )
    w = 10
    x = torch.arange(w, dtype=torch.float32).view(1, w, 1)
    mask = torch.ones(1, w, dtype=torch.bool)
    x_units, mask_units, _ = model.split_units(x, mask, torch.zeros(1, w))
    # 3 units of 5 posts, 3 apart, the last ending at slot 9; one padding slot in front.
    assert x_units[0, :, :, 0].tolist() == [[0, 0, 1, 2, 3], [2, 3, 4, 5, 6], [5, 6, 7, 8, 9]]
    assert mask_units[0, 0].tolist() == [False, True, True, True, True]
    assert mask_units[0, 1:].all()

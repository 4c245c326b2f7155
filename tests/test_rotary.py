import math

import pytest
import torch

from tempoformer.models.rotary import TemporalRotaryAttention, apply_rotary, rotary_cos_sin, rotate_half


def rot2(x, pos, d):
    """Hand RoPE for one vector, rotate_half convention: dims (j, j+d/2) form the j-th 2-D plane,
    rotated by pos * 10000^(-2j/d)."""
    y = x.clone()
    for j in range(d // 2):
        a = pos * 10000 ** (-2 * j / d)
        c, s = math.cos(a), math.sin(a)
        y[j] = c * x[j] - s * x[j + d // 2]
        y[j + d // 2] = s * x[j] + c * x[j + d // 2]
    return y


def identity_attention(d):
    """One head whose projections are identities, so its output is attention of the raw input."""
    m = TemporalRotaryAttention(d, 1).double()
    with torch.no_grad():
        for lin in (m.q_proj, m.k_proj, m.v_proj, m.o_proj):
            lin.weight.copy_(torch.eye(d))
        m.o_proj.bias.zero_()
    return m


def test_rotate_half():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert torch.equal(rotate_half(x), torch.tensor([-3.0, -4.0, 1.0, 2.0]))


def test_cos_sin_frequencies():
    cos, sin = rotary_cos_sin(torch.tensor([[0.0, 2.0]]), head_dim=4)
    assert cos.shape == sin.shape == (1, 2, 4)
    ang = torch.tensor([2.0, 2.0 * 0.01, 2.0, 2.0 * 0.01])  # theta = 10000^(-2j/4) = 1, 0.01
    torch.testing.assert_close(cos[0, 1], ang.cos())
    torch.testing.assert_close(sin[0, 1], ang.sin())
    torch.testing.assert_close(cos[0, 0], torch.ones(4))


def test_scores_match_hand_rope():
    torch.manual_seed(0)
    d, pos = 4, [3, 7]
    q = torch.randn(1, 1, 2, d, dtype=torch.float64)
    k = torch.randn(1, 1, 2, d, dtype=torch.float64)
    cos, sin = rotary_cos_sin(torch.tensor([pos], dtype=torch.float64), d)
    qr, kr = apply_rotary(q, k, cos, sin)
    scores = qr[0, 0] @ kr[0, 0].T
    hand = torch.tensor([[rot2(q[0, 0, m], pos[m], d) @ rot2(k[0, 0, n], pos[n], d) for n in range(2)]
                         for m in range(2)], dtype=torch.float64)
    torch.testing.assert_close(scores, hand, atol=1e-12, rtol=0)
    # relative: q_m^T R_{n-m} k_n
    assert scores[0, 1].item() == pytest.approx((q[0, 0, 0] @ rot2(k[0, 0, 1], pos[1] - pos[0], d)).item(), abs=1e-12)
    # and the rotation matters
    assert not torch.allclose(scores, q[0, 0] @ k[0, 0].T)


def test_attention_with_integer_coords_is_rope_attention():
    torch.manual_seed(1)
    d, pos = 4, [0, 1]
    m = identity_attention(d)
    x = torch.randn(1, 2, d, dtype=torch.float64)
    out = m(x, torch.ones(1, 2, dtype=torch.bool), torch.tensor([pos], dtype=torch.float64))
    for i in range(2):
        s = torch.stack([rot2(x[0, i], pos[i], d) @ rot2(x[0, j], pos[j], d) for j in range(2)]) / math.sqrt(d)
        torch.testing.assert_close(out[0, i], torch.softmax(s, 0) @ x[0], atol=1e-12, rtol=0)


def test_scores_depend_only_on_coordinate_differences():
    torch.manual_seed(2)
    m = TemporalRotaryAttention(16, 2).eval()
    x = torch.randn(3, 5, 16)
    mask = torch.tensor([[True] * 5, [False, True, True, True, True], [False, False, False, True, True]])
    coords = torch.rand(3, 5) * 10
    a = m(x, mask, coords)
    b = m(x, mask, coords + 3.7)
    # (padded slots' own outputs are never read; their coordinates are zeroed, not shifted)
    torch.testing.assert_close(a[mask], b[mask], atol=1e-6, rtol=0)
    full = torch.ones_like(mask)
    torch.testing.assert_close(m(x, full, coords), m(x, full, coords - 5.0), atol=1e-6, rtol=0)
    # differences do matter
    c = m(x, mask, coords * 2)
    assert (a - c)[mask].abs().max() > 1e-3


def test_none_coords_are_slot_indices():
    torch.manual_seed(3)
    m = TemporalRotaryAttention(8, 2)
    x, mask = torch.randn(2, 4, 8), torch.ones(2, 4, dtype=torch.bool)
    torch.testing.assert_close(m(x, mask, None), m(x, mask, torch.arange(4.0).expand(2, 4)))


def test_masked_keys_get_zero_weight():
    torch.manual_seed(4)
    m = TemporalRotaryAttention(8, 2)
    x = torch.randn(2, 4, 8)
    mask = torch.tensor([[False, False, True, True], [True, False, True, True]])
    coords = torch.rand(2, 4)
    a = m(x, mask, coords)
    x2, coords2 = x.clone(), coords.clone()
    x2[~mask] = torch.randn(int((~mask).sum()), 8) * 100  # anything at the padded slots...
    coords2[~mask] = float("nan")  # ...even a missing timestamp
    b = m(x2, mask, coords2)
    torch.testing.assert_close(a[mask], b[mask], atol=1e-6, rtol=0)
    # with identity projections, the output is a convex mix of the real slots only
    mi = identity_attention(2)
    v = torch.tensor([[[100.0, 0.0], [0.0, 1.0], [0.0, 3.0]]], dtype=torch.float64)
    out = mi(v, torch.tensor([[False, True, True]]), torch.zeros(1, 3, dtype=torch.float64))
    assert (out[0, :, 0].abs() < 1e-12).all()


def test_plain_attention_matches_hand_softmax():
    torch.manual_seed(5)
    H, nh = 8, 2
    hd = H // nh
    m = TemporalRotaryAttention(H, nh, use_rope=False)
    assert m.q_proj.bias is None and m.k_proj.bias is None and m.v_proj.bias is None
    assert m.o_proj.bias is not None
    x = torch.randn(2, 3, H)
    mask = torch.tensor([[False, True, True], [True, True, True]])
    coords = torch.rand(2, 3) * 5
    out = m(x, mask, coords)
    q = m.q_proj(x).view(2, 3, nh, hd).transpose(1, 2)
    k = m.k_proj(x).view(2, 3, nh, hd).transpose(1, 2)
    v = m.v_proj(x).view(2, 3, nh, hd).transpose(1, 2)
    s = q @ k.transpose(-1, -2) / math.sqrt(hd)
    s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
    hand = m.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(2, 3, H))
    torch.testing.assert_close(out, hand, atol=1e-6, rtol=0)
    # and coordinates are ignored without rope
    torch.testing.assert_close(m(x, mask, coords * 3), out)
    # while the rotary module with the same weights differs
    r = TemporalRotaryAttention(H, nh, use_rope=True)
    r.load_state_dict(m.state_dict())
    assert (r(x, mask, coords) - out).abs().max() > 1e-4

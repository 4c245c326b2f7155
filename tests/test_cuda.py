"""The GPU paths (CUDA kernels, bf16 autocast) against the CPU's fp32: run where a GPU is,
skipped elsewhere (CI has none)."""

import pytest
import torch

from tempoformer.device import autocast
from test_tempoformer_model import VARIANTS, batch, make  # noqa: F401 (batch: a fixture)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def no_tf32():
    """fp32 on the GPU as on the CPU: TF32 matmuls (cuDNN's LSTM allows them by default) round
    to 10 mantissa bits and would hide a real difference inside their own error."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def on(device, batch):
    return {k: v.to(device) for k, v in batch.items()}


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_gpu_fp32_equals_cpu(batch, kw):
    model = make(**kw)
    with torch.no_grad():
        cpu = model(**batch)
        gpu = model.cuda()(**on("cuda", batch)).cpu()
    torch.testing.assert_close(gpu, cpu, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_bf16_autocast_stays_near_fp32(batch, kw):
    """bf16 keeps 8 mantissa bits: logits within a few hundredths of fp32's, and the rotary
    angles (log-time gaps up to ~20 rad) computed in fp32 so that they don't drift further."""
    model = make(**kw).cuda()
    with torch.no_grad():
        fp32 = model(**on("cuda", batch))
        with autocast("cuda"):
            bf16 = model(**on("cuda", batch))
    assert torch.isfinite(bf16).all()
    assert (bf16.float() - fp32).abs().max() < 0.05 * max(1.0, fp32.abs().max().item())


def test_bf16_training_overfits_a_batch(batch):
    """The training loop's step on the GPU: fp32 master weights, bf16 forward, loss falls."""
    model = make().cuda().train()
    data = on("cuda", batch)
    labels = torch.tensor([0, 1, 2, 1], device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        with autocast("cuda"):
            loss = torch.nn.functional.cross_entropy(model(**data).float(), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert losses[-1] < 0.1 * losses[0]

"""The GPU paths (CUDA kernels, bf16 autocast) against the CPU's fp32: run where a GPU is,
skipped elsewhere (CI has none)."""

import numpy as np
import pytest
import torch

from tempoformer.device import autocast
from tempoformer.training.loop import TrainSettings, fit
from test_tempoformer_model import C, VARIANTS, batch, make  # noqa: F401 (batch: a fixture)

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


def test_training_loop_overfits_a_batch_on_the_gpu(batch):
    """training.loop.fit on CUDA, as the runs use it (bf16 autocast, fused AdamW, focal loss,
    bf16 dev predictions): four windows learnt by heart, fp32 master weights kept."""
    model = make()
    y = np.array([0, 1, 2, 1])
    rows = np.arange(len(y))

    def make_batch(r):
        r = torch.as_tensor(r)
        return {**batch, **{k: batch[k][r] for k in ("window_index", "window_mask", "time_gap")}}

    settings = TrainSettings(lr=3e-3, epochs=60, batch_size=len(y), patience=60, optimizer="adamw")
    result = fit(model, make_batch, y, rows, rows, torch.ones(C), ["a", "b", "c"], settings, seed=0,
                 device="cuda")
    losses = [epoch["train_loss"] for epoch in result["history"]]
    assert all(p.dtype == torch.float32 and p.is_cuda for p in model.parameters())
    assert losses[-1] < 0.1 * losses[0]
    assert result["dev_macro"] == 1.0


@pytest.mark.parametrize("head", ["tempoformer", "rotempoformer", "robert"])
def test_mpnet_gpu_fp32_equals_cpu_and_bf16_stays_near(batch, head):
    """The MPNet path (relative position bias, its own attention block) on CUDA: fp32 equal to the
    CPU's, fast path equal to the reference there too, bf16 autocast within noise of fp32."""
    from test_mpnet_backbone import make as make_mpnet

    ids = batch["input_ids"].clone()
    ids[:, 0] = 0
    b = {**batch, "input_ids": ids.masked_fill(batch["attention_mask"] == 0, 1)}  # <s> = 0, <pad> = 1
    model = make_mpnet(head=head, post_pooling="mean")
    with torch.no_grad():
        cpu = model(**b)
        model = model.cuda()
        gpu = model(**on("cuda", b))
        gpu_reference = model.forward_naive(**on("cuda", b))
        with autocast("cuda"):
            bf16 = model(**on("cuda", b))
    torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(gpu_reference, gpu, atol=1e-5, rtol=1e-4)
    assert torch.isfinite(bf16).all()
    assert (bf16.float() - gpu).abs().max() < 0.05 * max(1.0, gpu.abs().max().item())

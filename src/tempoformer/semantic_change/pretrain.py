"""MLM post-pretraining on a time-tagged corpus (seeded, CPU-friendly: few steps by default).

Each step draws `batch_size` sentences uniformly from all periods (seeded), encodes them with the
sentence's period (time ids for temporal/scaled attention, a time token for prepend), masks
`mlm_probability` of the word pieces (80% [MASK], 10% a random piece, 10% unchanged) and, for
prepend, the time token with probability `time_mask_prob` (time masking, Rosin et al. 2022), and
minimises the cross-entropy at the masked positions. AdamW; the pretrained weights train at `lr`,
the new parameters (time embeddings, time projections, MLM head) at `time_lr`; linear warm-up
then linear decay; gradient clipping. All randomness comes from `seed` (dropout under a forked
torch RNG, so no global state is touched).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from ..settings import check_ranges
from .data import DiachronicCorpus
from .encoding import WordPieceEncoder
from .model import TemporalBert

log = logging.getLogger(__name__)


@dataclass
class MLMPretrainSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    steps: int = field(default=100, metadata={"range": ">= 0"})  # 0: no post-pretraining
    batch_size: int = field(default=16, metadata={"range": ">= 1"})
    lr: float = field(default=3e-5, metadata={"range": "> 0"})
    time_lr: float = field(default=1e-3, metadata={"range": "> 0"})
    warmup_ratio: float = field(default=0.1, metadata={"range": "[0, 1]"})
    weight_decay: float = field(default=0.01, metadata={"range": ">= 0"})
    max_length: int = field(default=64, metadata={"range": ">= 3"})
    mlm_probability: float = field(default=0.15, metadata={"range": "(0, 1]"})
    time_mask_prob: float = field(default=0.15, metadata={"range": "[0, 1]"})
    max_grad_norm: float = field(default=1.0, metadata={"range": "> 0"})

    @classmethod
    def from_dict(cls, values: dict | None) -> "MLMPretrainSettings":
        values = dict(values or {})
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown training settings {sorted(unknown)}")
        check_ranges(cls, values, "training settings")
        return cls(**values)


def mask_batch(ids: torch.Tensor, special: torch.Tensor, time_positions: torch.Tensor | None,
               encoder: WordPieceEncoder, vocab_size: int, settings: MLMPretrainSettings,
               generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(masked input ids, labels with -100 where not predicted)."""
    labels = torch.full_like(ids, -100)
    chosen = (torch.rand(ids.shape, generator=generator) < settings.mlm_probability) & ~special
    if time_positions is not None:
        time_chosen = (torch.rand(ids.shape[0], generator=generator) < settings.time_mask_prob)
        rows = torch.arange(ids.shape[0])[time_chosen]
        chosen[rows, time_positions[time_chosen]] = True
    if not chosen.any():  # at least one prediction per batch
        candidates = (~special).nonzero()
        pick = candidates[torch.randint(len(candidates), (1,), generator=generator)][0]
        chosen[pick[0], pick[1]] = True
    labels[chosen] = ids[chosen]
    masked = ids.clone()
    roll = torch.rand(ids.shape, generator=generator)
    masked[chosen & (roll < 0.8)] = encoder.mask_id
    random_pos = chosen & (roll >= 0.8) & (roll < 0.9)
    masked[random_pos] = torch.randint(vocab_size, (int(random_pos.sum()),), generator=generator)
    return masked, labels


def collate(encoded: list, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(e.ids) for e in encoded)
    ids = torch.full((len(encoded), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(encoded), n), dtype=torch.long)
    for i, e in enumerate(encoded):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        mask[i, : len(e.ids)] = 1
    return ids, mask


def post_pretrain(model: TemporalBert, encoder: WordPieceEncoder, corpus: DiachronicCorpus,
                  settings: MLMPretrainSettings, seed: int, device: str = "cpu") -> dict:
    """Train in place; returns a log {losses, seconds, settings}."""
    started = time.perf_counter()
    if settings.steps <= 0:
        return {"steps": 0, "losses": [], "seconds": 0.0, "settings": asdict(settings)}
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    index = [(p, i) for p, period in enumerate(corpus.sentences) for i in range(len(period))]
    vocab_size = len(encoder.tokenizer) if encoder.time_token_ids is None else min(encoder.time_token_ids)
    new = model.new_parameter_names()
    groups: dict[tuple[float, float], list] = {}
    for name, param in model.named_parameters():
        lr = settings.time_lr if name in new else settings.lr
        decay = 0.0 if param.dim() < 2 or name.startswith("time_embeddings") else settings.weight_decay
        groups.setdefault((lr, decay), []).append(param)
    optimizer = torch.optim.AdamW(
        [{"params": ps, "lr": lr, "weight_decay": wd} for (lr, wd), ps in groups.items()])
    warmup = max(1, int(settings.warmup_ratio * settings.steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (settings.steps - s) / max(1, settings.steps - warmup))))
    special_ids = torch.tensor([encoder.cls_id, encoder.sep_id, encoder.pad_id]
                               + (encoder.time_token_ids or []))
    encoder_max = encoder.max_length
    encoder.max_length = settings.max_length
    losses = []
    model.to(device).train()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # dropout
            for step in range(settings.steps):
                picks = rng.integers(len(index), size=settings.batch_size)
                batch = [index[j] for j in picks]
                encoded = [encoder.encode(corpus.sentences[p][i], period=p) for p, i in batch]
                ids, attention = collate(encoded, encoder.pad_id)
                special = torch.isin(ids, special_ids) | (attention == 0)
                time_positions = (torch.ones(len(batch), dtype=torch.long)
                                  if encoder.time_token_ids is not None else None)
                masked, labels = mask_batch(ids, special, time_positions, encoder, vocab_size,
                                            settings, generator)
                periods = torch.tensor([p for p, _ in batch])
                hidden = model(masked.to(device), attention.to(device), periods.to(device))[-1]
                where = labels != -100
                logits = model.mlm_logits(hidden[where.to(device)])
                loss = F.cross_entropy(logits, labels[where].to(device))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
                optimizer.step()
                schedule.step()
                losses.append(float(loss.detach()))
                if (step + 1) % max(1, settings.steps // 10) == 0:
                    log.info("step %d/%d: mlm loss %.3f (mean of last %d: %.3f)", step + 1, settings.steps,
                             losses[-1], min(10, len(losses)), float(np.mean(losses[-10:])))
    finally:
        encoder.max_length = encoder_max
        model.eval()
    seconds = time.perf_counter() - started
    return {"steps": settings.steps, "losses": losses, "seconds": seconds, "settings": asdict(settings),
            "first10_loss": float(np.mean(losses[:10])), "last10_loss": float(np.mean(losses[-10:]))}

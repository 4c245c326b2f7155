"""Generation with the paper's decoding: beam search with top-k / top-p sampling (Hugging Face's
`beam_sample`: num_beams 5, top_k 50, top_p 0.92), from the start token (GPT-2: end-of-text;
here BOS), for a given year, deterministic for a seed (a torch.Generator of its own).

One step, as transformers' beam sample does it: each beam's next-token log-probabilities plus
the beam's score; top-k then top-p filtering per beam; 2 x beams candidates drawn without
replacement from the softmax over all beams' filtered scores; the candidates sorted by score;
an EOS candidate among the first `beams` closes a hypothesis (score / length^length_penalty),
the first `beams` non-EOS candidates continue. Decoding stops when `beams` hypotheses are
closed and no running beam can beat the worst of them, or at `max_tokens`.

The authors' generation scripts add no_repeat_ngram_size=2 and repetition_penalty=2
(generator.py:381-395): the options `no_repeat_ngram` and `repetition_penalty` (off by default,
the paper's stated decoding).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch.nn import functional as F

from ..settings import settings_from_dict


@dataclass
class DecodeSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    beams: int = field(default=5, metadata={"range": ">= 1"})
    top_k: int = field(default=50, metadata={"range": ">= 0"})
    top_p: float = field(default=0.92, metadata={"range": "(0, 1]"})
    max_tokens: int = field(default=200, metadata={"range": ">= 1"})
    length_penalty: float = 1.0
    no_repeat_ngram: int = field(default=0, metadata={"range": ">= 0"})
    repetition_penalty: float = field(default=1.0, metadata={"range": "> 0"})

    @classmethod
    def from_dict(cls, d: dict | None) -> "DecodeSettings":
        return settings_from_dict(cls, d, "decoding")

    def to_dict(self):
        return asdict(self)


def top_k_top_p(scores: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Per row: keep the top_k highest scores, then the smallest set whose probability reaches
    top_p (the most likely token always stays); the rest -inf."""
    scores = scores.clone()
    if top_k and top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[..., -1:]
        scores[scores < kth] = -float("inf")
    if top_p < 1.0:
        sorted_scores, order = torch.sort(scores, descending=False, dim=-1)
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= (1 - top_p)
        remove_sorted[..., -1] = False
        remove = remove_sorted.scatter(-1, order, remove_sorted)
        scores[remove] = -float("inf")
    return scores


def _block_repeats(logp: torch.Tensor, seqs: list[list[int]], settings: DecodeSettings) -> torch.Tensor:
    if settings.repetition_penalty != 1.0:
        for b, seq in enumerate(seqs):
            seen = torch.tensor(sorted(set(seq)), dtype=torch.long)
            vals = logp[b, seen]
            logp[b, seen] = torch.where(vals < 0, vals * settings.repetition_penalty, vals / settings.repetition_penalty)
    n = settings.no_repeat_ngram
    if n:
        for b, seq in enumerate(seqs):
            if len(seq) >= n:
                prefix = tuple(seq[len(seq) - n + 1:])
                banned = [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i:i + n - 1]) == prefix]
                if banned:
                    logp[b, banned] = -float("inf")
    return logp


def beam_sample(model, year: int, bos: int, eos: int, settings: DecodeSettings, seed: int,
                device: str = "cpu") -> list[int]:
    """One generated sequence (LM ids, without BOS/EOS)."""
    gen = torch.Generator().manual_seed(int(seed))
    beams = settings.beams
    max_tokens = min(settings.max_tokens, model.lm.context - 1)
    was_training = model.training
    model.eval()
    finished: list[tuple[float, list[int]]] = []
    seqs = [[bos] for _ in range(beams)]
    scores = torch.tensor([0.0] + [-1e9] * (beams - 1), dtype=torch.float64)
    with torch.inference_mode():
        state = model.year_state(year)
        inputs = torch.full((beams, 1), bos, dtype=torch.long, device=device)
        past = None
        for step in range(max_tokens):
            logits, past = model.logits(inputs, year, past, state=state)
            logp = F.log_softmax(logits[:, -1].double().cpu(), dim=-1)
            logp = _block_repeats(logp, seqs, settings)
            next_scores = logp + scores.unsqueeze(1)                       # [beams, V]
            filtered = top_k_top_p(next_scores, settings.top_k, settings.top_p)
            probs = filtered.view(-1).softmax(dim=0)
            n_candidates = min(2 * beams, int((probs > 0).sum()))
            cand = torch.multinomial(probs.float(), n_candidates, replacement=False, generator=gen)
            cand_scores = next_scores.view(-1)[cand]
            order = torch.argsort(cand_scores, descending=True, stable=True)
            vocab = next_scores.shape[1]
            keep = []
            for rank, j in enumerate(order.tolist()):
                idx = int(cand[j])
                b, tok = divmod(idx, vocab)
                score = float(cand_scores[j])
                if tok == eos:
                    if rank < beams:
                        length = len(seqs[b])  # BOS + tokens; EOS counted as HF counts the current length
                        finished.append((score / (length ** settings.length_penalty), seqs[b][1:]))
                    continue
                keep.append((score, b, tok))
                if len(keep) == beams:
                    break
            if not keep:
                break
            while len(keep) < beams:  # fewer candidates than beams: repeat the last, scored out
                keep.append((-1e9, keep[-1][1], keep[-1][2]))
            finished.sort(key=lambda x: -x[0])
            finished = finished[:beams]
            best_running = max(s for s, _, _ in keep) / ((len(seqs[0]) + 1) ** settings.length_penalty)
            if len(finished) >= beams and finished[-1][0] >= best_running:
                break
            index = torch.tensor([b for _, b, _ in keep], dtype=torch.long)
            seqs = [seqs[b] + [tok] for _, b, tok in keep]
            scores = torch.tensor([s for s, _, _ in keep], dtype=torch.float64)
            past = model.lm.reorder(past, index.to(device))
            inputs = torch.tensor([[tok] for _, _, tok in keep], dtype=torch.long, device=device)
            if len(seqs[0]) >= model.lm.context:
                break
    model.train(was_training)
    # as transformers' finalize: the running beams compete with the closed hypotheses
    finished += [(float(scores[b]) / (len(seqs[b]) ** settings.length_penalty), seqs[b][1:])
                 for b in range(len(seqs)) if float(scores[b]) > -1e8]
    return max(finished, key=lambda x: x[0])[1]

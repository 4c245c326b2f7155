"""Batches of token id lists padded only to their longest member."""

import torch


def pad_batch(seqs: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad token id lists to the longest of them."""
    L = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, s in enumerate(seqs):
        input_ids[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        attention_mask[i, : len(s)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}

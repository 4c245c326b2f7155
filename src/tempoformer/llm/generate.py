"""Generation backend over any causal LM: greedy decoding of a few tokens, batched.

The model and tokenizer come from one name: a registered model (`smollm2-135m`, the 4-bit
SmolLM2-135M-Instruct: an opt-in set-up; tempoformer/causal_lms.py), a .gguf file, a local
directory, or a hub id when the machine is online. A prompt goes through the tokenizer's chat template when it has one (system message
folded into the user message when the template has no system role), else it is rendered in the
[INST] format of the paper's models (`Prompt.plain`). On CUDA the weights are loaded in
bfloat16, on the CPU in float32.
"""

from __future__ import annotations

import logging

import torch

from ..device import pick_device
from .prompts import Prompt

log = logging.getLogger(__name__)

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def load_causal_lm(path: str, device: str | None = None, dtype: str = "auto"):
    """(model in eval mode on `device`, tokenizer padding on the left) from one name or path."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..causal_lms import pretrained_source

    device = pick_device(device)
    path, source = pretrained_source(path)  # a GGUF file: its folder and {"gguf_file": name}
    tokenizer = AutoTokenizer.from_pretrained(path, **source)
    if tokenizer.pad_token is None:  # Llama/Mistral tokenizers have none; padding is masked anyway
        tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
    tokenizer.padding_side = "left"  # decoder-only: the answer must follow the prompt directly
    model = AutoModelForCausalLM.from_pretrained(path, dtype=resolve_dtype(dtype, device), **source)
    return model.to(device).eval(), tokenizer


def render(prompt: Prompt, tokenizer) -> tuple[str, bool]:
    """(text to tokenise, whether the tokenizer adds its special tokens): a chat template
    writes its own BOS, the plain [INST] format leaves it to the tokenizer."""
    if getattr(tokenizer, "chat_template", None):
        from jinja2.exceptions import TemplateError

        try:
            text = tokenizer.apply_chat_template(prompt.messages(), tokenize=False, add_generation_prompt=True)
        except TemplateError:  # e.g. Mistral-Instruct: roles must alternate user/assistant
            text = tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt.text()}], tokenize=False, add_generation_prompt=True
            )
        return text, False
    return prompt.plain(), True


@torch.no_grad()
def generate_answers(model, tokenizer, prompts: list[Prompt], max_new_tokens: int = 8,
                     batch_size: int = 4) -> tuple[list[str], list[int]]:
    """Greedy answers (the new tokens only, decoded without special tokens) and each prompt's
    length in tokens. Prompts are batched by length so padding stays small."""
    rendered = [render(p, tokenizer) for p in prompts]
    special = {add for _, add in rendered}
    if len(special) > 1:
        raise ValueError("prompts rendered inconsistently")
    add_special = special.pop() if special else True
    texts = [t for t, _ in rendered]
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=add_special)["input_ids"]]
    limit = getattr(model.config, "max_position_embeddings", None)
    too_long = sum(n + max_new_tokens > limit for n in lengths) if limit else 0
    if too_long:
        log.warning("%d of %d prompts exceed the model's %d positions; shorten posts with max_post_chars",
                    too_long, len(texts), limit)
    order = sorted(range(len(texts)), key=lambda i: -lengths[i])
    device = next(model.parameters()).device
    answers: list[str] = [""] * len(texts)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        enc = tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True,
                        add_special_tokens=add_special).to(device)
        out = model.generate(
            **enc, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
            pad_token_id=tokenizer.pad_token_id,
        )
        new = out[:, enc["input_ids"].shape[1] :]
        for i, text in zip(idx, tokenizer.batch_decode(new, skip_special_tokens=True)):
            answers[i] = text.strip()
        if (start // batch_size) % 50 == 0:
            log.info("generated %d / %d answers", min(start + batch_size, len(texts)), len(texts))
    return answers, lengths

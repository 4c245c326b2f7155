"""LLM few-shot baselines of the paper (§4.2, appendix E): post-level "U" and stream-level "S" prompts.

prompts.py    the paper's prompt texts per task and the few-shot prompt builder
generate.py   greedy generation over any causal LM (chat template when the tokenizer has one)
bucketing.py  free-text answers -> labels (unmatched answers -> a fallback label, counted)
predict.py    llm_predict(data, params, window, seed): one label per test post, like the Random baseline
"""

from .predict import llm_predict

__all__ = ["llm_predict"]

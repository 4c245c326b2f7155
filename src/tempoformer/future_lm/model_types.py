"""The future LM model types (biases.py implements them), importable without torch: the
workflow reads them when it parses its rules (future_lm_common.smk)."""

MODEL_TYPES = ("baseline", "baseline_n", "frequency_nolstm", "frequency", "context", "context2")
TEMPORAL = ("frequency_nolstm", "frequency", "context", "context2")
NEEDS_CONTEXT = ("context", "context2")

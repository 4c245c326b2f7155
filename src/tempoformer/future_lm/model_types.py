"""The future LM model types (biases.py implements them), importable without torch: the
workflow reads them when it parses its rules (future_lm_common.smk)."""

MODEL_TYPES = ("baseline", "baseline_n", "static_bias", "frequency_nolstm", "frequency", "context", "context2")
TEMPORAL = ("frequency_nolstm", "frequency", "context", "context2")
# every type that adds a bias to the softmax: the temporal ones and the static-bias control
BIASED = ("static_bias", *TEMPORAL)
NEEDS_CONTEXT = ("context", "context2")
# alpha_scope: context2 = α only in Eq. 10 (the paper); all = α on every bias (this code's first reading)
ALPHA_SCOPES = ("context2", "all")
# Types whose α is their only scale, under either scope: Frequency-NoLSTM adds "the previous year's
# frequency as a bias feature" with no learned weight, so the paper's α grid (§4.3, "for each
# model") is the feature's weight; without it log f would be added at 1, counting the unigram
# prior the LM already learned twice (+87% test perplexity on acl_sample).
ALPHA_ALWAYS = ("frequency_nolstm",)
# Baseline-n's starting point: base = the base LM before it saw any training year (the paper's
# GPT-2); pretrained = the LM pretrained here on all the training years
BASELINE_N_STARTS = ("base", "pretrained")


def alpha_applies(model_type: str, alpha_scope: str = "context2") -> bool:
    """Whether α scales this type's bias (otherwise α is fixed at 1 and not learned)."""
    return model_type in BIASED and (model_type == "context2" or model_type in ALPHA_ALWAYS or alpha_scope == "all")


def check_model_entry(entry: dict, where: str = "model") -> None:
    """ValueError naming `where` for options a model entry's type does not take (the schema and
    BiasSpec check each value; this, their combinations): α under alpha_scope, Baseline-n's start."""
    kind = entry.get("type")
    alphas = entry.get("alpha", [1.0])
    alphas = alphas if isinstance(alphas, (list, tuple)) else [alphas]
    scope = entry.get("alpha_scope", "context2")
    if kind in BIASED and not alpha_applies(kind, scope) and \
            (any(float(a) != 1.0 for a in alphas) or entry.get("alpha_learned")):
        given = ", ".join(f"{float(a):g}" for a in alphas) + (" (learned)" if entry.get("alpha_learned") else "")
        raise ValueError(f"{where}: a {kind} model with alpha {given}, but under alpha_scope: {scope} (the paper: α "
                         "only in Eq. 10) α scales only Context²'s bias (and Frequency-NoLSTM's feature); leave alpha at 1 and alpha_learned false, "
                         "or set alpha_scope: all")
    if entry.get("start", "base") != "base" and kind != "baseline_n":
        raise ValueError(f"{where}: start {entry['start']!r} is Baseline-n's option (where its fine-tuning starts); "
                         f"a {kind} model starts from the pretrained LM")


def resolve_baselines(section: dict, models=None) -> list[str]:
    """The model entries every model is tested against: the stage section's `baselines` (a list),
    or the single `baseline` of configs before it (both given: an error); neither: the entries
    `baseline` and `baseline_n` (those of `models` when it is given). With `models` (the
    entries), each named baseline must be one of them."""
    if section.get("baselines") is not None and section.get("baseline") is not None:
        raise ValueError("future_lm: give `baselines` (a list) or the older single `baseline`, not both")
    if section.get("baseline") is None and section.get("baselines") is None:
        return [b for b in ("baseline", "baseline_n") if models is None or b in models]
    baselines = [section["baseline"]] if section.get("baseline") is not None else section["baselines"]
    if not isinstance(baselines, list) or not baselines or not all(isinstance(b, str) for b in baselines) \
            or len(set(baselines)) < len(baselines):
        raise ValueError(f"future_lm.baselines must be a non-empty list of distinct model entries, got {baselines!r}")
    if models is not None:
        missing = [b for b in baselines if b not in models]
        if missing:
            raise ValueError(f"future_lm.baselines names {missing}, which have no entry under future_lm.models")
    return list(baselines)

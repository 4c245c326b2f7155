"""The semantic change methods (Rosin & Radinsky 2022 and its baselines): one job each."""

# Method name -> how time enters and whether the model is post-pretrained first.
METHODS: dict[str, dict] = {
    "plain": {"time": "none", "prepend": False, "train": False},
    "plain_mlm": {"time": "none", "prepend": False, "train": True},
    "temporal_attention": {"time": "attention", "prepend": False, "train": True},
    "scaled_linear": {"time": "scaled_linear", "prepend": False, "train": True},
    "scaled_exp": {"time": "scaled_exp", "prepend": False, "train": True},
    "scaled_doc": {"time": "scaled_doc", "prepend": False, "train": True},
    "prepend": {"time": "none", "prepend": True, "train": True},
    "prepend_attention": {"time": "attention", "prepend": True, "train": True},
}

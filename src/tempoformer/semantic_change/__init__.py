"""Semantic change detection with temporal attention (Rosin & Radinsky 2022) and its baselines.

Modules: data (SemEval-2020 Task 1 readers), synthetic (embedded graded-change corpus),
encoding (word pieces with exact spans), attention (temporal and scaled attention as pure
functions), model (TemporalBert on a pretrained BERT), pretrain (MLM post-pretraining),
scoring (Algorithm 1, correlations), tables (Tables 2-4 beside the paper), cli (entry points).
"""

from .attention import scaled_scores, temporal_scores, time_matrix
from .data import DiachronicCorpus, load_dataset, read_release, read_small_corpora
from .encoding import WordPieceEncoder
from .model import TemporalBert, TemporalSpec, build_model, load_model, save_model
from .pretrain import TrainSettings, post_pretrain
from .scoring import ScoreSettings, change_scores, correlations, cosine_distance
from .synthetic import build_synthetic, write_release

__all__ = [
    "DiachronicCorpus", "ScoreSettings", "TemporalBert", "TemporalSpec", "TrainSettings", "WordPieceEncoder",
    "build_model", "build_synthetic", "change_scores", "correlations", "cosine_distance", "load_dataset",
    "load_model", "post_pretrain", "read_release", "read_small_corpora", "save_model", "scaled_scores",
    "temporal_scores", "time_matrix", "write_release",
]

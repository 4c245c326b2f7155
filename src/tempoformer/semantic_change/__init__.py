"""Semantic change detection with temporal attention (Rosin & Radinsky 2022) and its baselines.

Modules: data (SemEval-2020 Task 1 readers), synthetic (embedded graded-change corpus),
encoding (word pieces with exact spans), attention (temporal and scaled attention as pure
functions), model (TemporalBert on a pretrained BERT), pretrain (MLM post-pretraining),
scoring (Algorithm 1, correlations), tables (Tables 2-4 beside the paper), cli (entry points).
"""

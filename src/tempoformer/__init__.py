"""tempoformer: temporally-aware change detection in streams of text (TempoFormer, EMNLP 2024)."""

__version__ = "0.1.0"

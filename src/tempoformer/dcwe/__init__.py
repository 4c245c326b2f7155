"""Dynamic contextualized word embeddings (Hofmann, Pierrehumbert & Schütze, ACL 2021).

Modules: data (corpora: documents with text, time and social unit, plus a social graph; the
chitchat construction; Table 1 statistics), graph (node2vec, graph statistics), gat (a 2-layer
graph attention network), vocab (the filtered vocabulary of words with dynamic embeddings),
model (DCWE on a BERT backbone, its ablations and the static control), train (MLM warm-up and
fine-tuning with the priors, until dev stops improving, resumable per epoch), evaluate (fixed-mask
perplexity, Wilcoxon, sigma_sim over whole words, change scores), diffusion (the paper's Figures
4-5), extrapolation (the held-out-month test), tables, cli.
"""

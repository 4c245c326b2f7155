"""Dynamic contextualized word embeddings (Hofmann, Pierrehumbert & Schütze, ACL 2021).

Modules: data (corpora: documents with text, time and social unit, plus a social graph; the
chitchat construction; Table 1 statistics), graph (node2vec, graph statistics), gat (a 2-layer
graph attention network), vocab (the filtered vocabulary of words with dynamic embeddings),
model (DCWE on a BERT backbone), train (MLM warm-up and fine-tuning with the priors), evaluate
(fixed-mask perplexity, Wilcoxon, sigma_sim, change scores), tables, cli.
"""

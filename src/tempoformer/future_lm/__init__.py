"""Future language modeling (Li & Flanigan, ICLR 2024): predict next year's abstracts from the
history of earlier years through temporal word biases. One module per concept:

- data.py: readers (Anthology JSONL, the authors' per-year files), the paper's filter as a
  counted step, splits by year, and each document's history (strictly before its year);
- tokens.py: the language model's tokenizer, vocabulary and per-document token ids;
- frequency.py: per-year smoothed log frequencies on that vocabulary;
- context.py: per-year mean contextual embeddings V_iw from the frozen MiniLM;
- lm.py: the small causal Transformer that plays GPT-2 (or a Hugging Face causal LM);
- biases.py: the temporal biases (Frequency-NoLSTM, Frequency, Context, Context²) and the model
  that adds them to the softmax;
- train.py: pretraining and fine-tuning with early stopping on dev perplexity;
- evaluate.py, generate.py, meteor.py: perplexities, content perplexity, generation, content
  METEOR; unigram.py: frequency-bias baselines and the next-year oracle;
- human_eval.py: the blinded human-evaluation sheet; tables.py: tables and figures.
"""

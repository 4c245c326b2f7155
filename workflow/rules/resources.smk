# What each job asks a cluster for (profiles/slurm): `runtime` (minutes, sbatch --time), `mem_mb`
# (MB, --mem) and, for the jobs whose code runs on CUDA, `gpu` (--gpus). Local runs ignore runtime
# and gpu. `--set-resources RULE:KEY=VALUE` overrides any of them without editing the workflow.
#
# A request is an estimate of the job from the rule's own config (steps or epochs, batch size,
# sequence length, corpus caps, model size, grid points, seeds are separate jobs), calibrated on
# the times measured on this repository's 2-core machine (each calibration constant below names
# its source), then:
#   - runtime: RUNTIME_MARGIN x the estimate (the measurements are CPU seconds of one free core;
#     on a loaded machine wall time was 1.1-2x that: README.md, config/future_lm_acl.yaml), and at
#     least MIN_RUNTIME, the profile's default, which covers Python/torch start-up and small jobs;
#   - both doubled with each retry (`attempt`), as in train.smk: a job killed for exceeding its
#     time or memory comes back with twice the request (profiles/slurm: retries: 2).
# The estimates use each stage's upper bounds where the size is only known once the data is read
# (caps times years, the full WordPiece vocabulary): they err long, never short.
# Included by the Snakefile before the stage files; the functions read the stage settings
# (DC, SC, FL, ...) when a job is planned, after every file is read. No rules here.
import math
from types import SimpleNamespace

MIN_RUNTIME = 30  # minutes
RUNTIME_MARGIN = 2
BASE_MEM_MB = 2000  # a job's Python, torch, transformers and its data frames


def grow(value, attempt):
    """A request of the first attempt, doubled with each retry."""
    return int(math.ceil(value)) * 2 ** (attempt - 1)


def mem_request(mb, attempt):
    """MB to request for a job estimated at `mb`, in steps of 100 MB."""
    return grow(100 * math.ceil(mb / 100), attempt)


def runtime_minutes(seconds, attempt):
    """Minutes to request for a job estimated at `seconds` of one free core."""
    return grow(max(MIN_RUNTIME, RUNTIME_MARGIN * seconds / 60), attempt)


def short_runtime(wildcards, attempt):
    """Jobs of seconds (ingest, windows, folds, corpus statistics, tables): the floor."""
    return runtime_minutes(0, attempt)


def stage_gpu(section, longest_seconds):
    """`gpu` of a job whose code runs on CUDA, from its stage's `device` setting: "cpu" never asks
    for one; "cuda", "cuda:1" always do (the job would fail without one); null (cuda if
    available) asks for one when the dataset's longest training job is estimated above
    MIN_RUNTIME. Decided per dataset, not per job, so that all the models a table compares are
    trained and scored on the same kind of device (a GPU's numbers match the CPU's only within
    noise: README.md); the smoke configs' jobs stay CPU jobs, so a cluster without GPUs runs them
    as they are."""
    device = section.get("device")
    if device is None:
        return 1 if RUNTIME_MARGIN * longest_seconds / 60 > MIN_RUNTIME else 0
    return 1 if str(device).startswith("cuda") else 0


# --------------------------------------------------------------- transformer encoders (BERT-like)
# One training step (forward + backward) of MiniLM-L6 over 16 sequences of 128 word pieces:
# 2.1 s. Measured: temporal attention on SemEval English, 209 s for 100 such steps; DCWE's SA
# there, 582 s for 300 steps and its evaluation (results/tables/dcwe_semeval_eng/README.md); DCWE
# at CPU scale, 4.3 s a step at a load of 4-5 (config/dcwe_chitchat.yaml), ~1.0-1.3 s alone.
ENCODER_TRAIN_S = 2.1 / (16 * 128)  # seconds per (sequence x piece) of a training step
ENCODER_FORWARD_S = ENCODER_TRAIN_S / 3  # forward only (evaluation, scoring, encoding)
MLM_VOCAB = 30522  # BERT/MiniLM WordPiece vocabulary: the MLM head's logits per piece


def encoder_size(backbone):
    """(layers, width, parameters, cost per piece relative to MiniLM-L6) of a backbone: the
    offline MiniLM-L6, SmolLM2-135M, else a BERT-base-sized model (the papers', MPNet-base), or
    BERT-large by its name."""
    name = str(backbone or "minilm").lower()
    if name == "minilm":
        return 6, 384, 22e6, 1.0
    if "large" in name:
        return 24, 1024, 335e6, 28.0
    if name == "smollm2-135m":  # the future-LM V_iw encoder option: 106M multiply-adds a piece in its layers
        return 30, 576, 135e6, 10.0
    return 12, 768, 110e6, 8.0


def encoder_seconds(backbone, sequences, length, train=True):
    return sequences * length * (ENCODER_TRAIN_S if train else ENCODER_FORWARD_S) * encoder_size(backbone)[3]


def encoder_mem_mb(backbone, batch_size, length, mlm=True, train=True):
    """The model (weights, gradients and AdamW state: 16 B a parameter when training), the
    activations of a batch (~20 floats per piece, layer and width, kept for the backward pass)
    and the MLM logits over the vocabulary (forward and backward)."""
    layers, width, params, _ = encoder_size(backbone)
    pieces = batch_size * length
    mb = (16 if train else 4) * params + 4 * 20 * pieces * layers * width + (12 * pieces * MLM_VOCAB if mlm else 0)
    return BASE_MEM_MB + mb / 1e6


# --------------------------------------------------------------- TempoFormer stage (Tables 1-6, 11)
# The train and embed rules keep their own requests (train.smk, embed.smk). Window streams: the
# window-20 target of bench/streams.py is 2,048 MB of peak memory.
WINDOWS_MEM_MB = 4096


def diversity_seconds():
    """BERTScore between max_pairs sampled post pairs (config `diversity`): two encodings each."""
    d = config["diversity"]
    return encoder_seconds(d["backbone"], 2 * d["max_pairs"], d["max_tokens"], train=False)


def diversity_mem_mb():
    d = config["diversity"]
    return encoder_mem_mb(d["backbone"], 64, d["max_tokens"], mlm=False, train=False)


# --------------------------------------------------------------- semantic change (Rosin & Radinsky)
# Targets of a SemEval-2020 language: 31-48 (English 37); periods: two unless the release names more.
SC_MAX_TARGETS = 50


def sc_training(name):
    t = sc_section(name, "training")  # defaults: semantic_change/pretrain.py MLMPretrainSettings
    return int(t.get("steps", 100)), int(t.get("batch_size", 16)), int(t.get("max_length", 64))


def sc_train_seconds(w):
    """MLM post-pretraining: steps x batch x max_length."""
    steps, batch_size, length = sc_training(w.sc_dataset)
    return encoder_seconds(SC.get("backbone"), steps * batch_size, length)


def sc_longest_seconds(name):
    """The dataset's longest job (a trained method's training, or scoring)."""
    w = SimpleNamespace(sc_dataset=name)
    trains = any(SC_METHOD_SPECS[m]["train"] for m in SC_METHODS)
    return max(sc_train_seconds(w) if trains else 0, sc_score_seconds(w))


def sc_train_mem_mb(w):
    _, batch_size, length = sc_training(w.sc_dataset)
    return encoder_mem_mb(SC.get("backbone"), batch_size, length)


def sc_score_seconds(w):
    """Algorithm 1: n_sentences per target and period, encoded once each (semeval_eng: 111-161 s)."""
    s = sc_section(w.sc_dataset, "scoring")  # defaults: semantic_change/scoring.py ScoreSettings
    periods = len(SC_DATASETS[w.sc_dataset].get("periods") or SC_DATASETS[w.sc_dataset].get("corpora") or [0, 0])
    sentences = int(s.get("n_sentences", 100)) * periods * SC_MAX_TARGETS
    return encoder_seconds(SC.get("backbone"), sentences, int(s.get("max_length", 128)), train=False)


def sc_score_mem_mb(w):
    s = sc_section(w.sc_dataset, "scoring")
    return encoder_mem_mb(SC.get("backbone"), int(s.get("batch_size", 32)), int(s.get("max_length", 128)),
                          mlm=False, train=False)


# --------------------------------------------------------------- DCWE (Hofmann et al. 2021)
# Documents of a dataset, before it is read (with `epochs`, the steps depend on them): upper
# bounds from the corpora the readers build. chitchat: 1,172 documents at cap 1 and 4,864 at cap 5
# per (sender, month), 80,507 uncapped; chitchat_rating: at most 2 documents per conversation,
# `cap` conversations per label, 3,894 in all; a semantic change corpus read as a time-only one:
# SemEval English's sample has 10,663 sentences; csv and release corpora (the paper's: 270k-970k
# documents): their files at >= 100 bytes a document, else 1,000,000.
DC_TRAIN_SHARE = 0.7  # data.split_by_time: 70/10/20 train/dev/test
DC_GNN_FACTOR = 1.3  # a step of DCWE / TA (GAT over the social graph) against CWE / SA (dcwe_grid.md times)
# node2vec: all of node2vec, corpus and tables took under a minute at the paper's settings (10
# walks of 80, 10 epochs) on chitchat_c5's 1,027 senders: <= 7.3e-6 s per walk step.
DC_NODE2VEC_S = 60 / (1027 * 10 * 80 * 10)
DC_MAX_UNITS = 20000  # social units of a graph (the paper's largest, Ciao: 10,880 users)


def dc_documents(name):
    spec = DC_DATASETS[name]
    fmt = "semantic_change" if spec.get("semantic_change_dataset") else spec.get("format")
    cap = spec.get("cap")
    if fmt == "chitchat":
        return 80507 if cap is None else min(80507, 1200 * cap)
    if fmt == "chitchat_rating":
        return 3894 if cap is None else min(3894, 4 * cap)
    if fmt == "semantic_change":
        return 20000
    size = sum(_bytes(path) for path in dc_external_files(name))
    return size // 100 if size else 1000000


def _bytes(path):
    """Size of a file, or of the files under a folder; 0 where there is nothing (yet)."""
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)
    return os.path.getsize(path) if os.path.isfile(path) else 0


def dc_units(name):
    fmt = DC_DATASETS[name].get("format")
    return {"chitchat": 1200, "chitchat_rating": 400}.get(fmt, DC_MAX_UNITS)


def dc_section(name, section):
    """A training section (warmup, training, sentiment) with DCWETrainSettings' defaults."""
    values = {**DC.get(section, {}), **DC_DATASETS[name].get(section, {})}
    fields = DcTrainSettings.__dataclass_fields__
    return {key: values.get(key, field.default) for key, field in fields.items()}


def dc_max_length(name):
    return DC_DATASETS[name].get("max_length", DC.get("max_length", 128))


def dc_steps(name, section):
    """(steps, evaluations) of a section: `steps`, or `epochs` passes over the training documents
    with a dev evaluation after each."""
    s = dc_section(name, section)
    if s["epochs"] is None:
        return s["steps"], 1
    return s["epochs"] * math.ceil(DC_TRAIN_SHARE * dc_documents(name) / s["batch_size"]), s["epochs"]


def dc_warmup_seconds(w):
    steps, _ = dc_steps(w.dc_dataset, "warmup")
    return encoder_seconds(DC.get("backbone"), steps * dc_section(w.dc_dataset, "warmup")["batch_size"],
                           dc_max_length(w.dc_dataset))


def dc_train_seconds(w, section="training"):
    """Training of one grid point (the GAT of DCWE and TA on top), dev after each epoch, then test
    (batch perplexity and the authors' batch-mean perplexity) and a pass over all documents (the
    dynamic embeddings of Table 4 and the change scores)."""
    name, backbone, length = w.dc_dataset, DC.get("backbone"), dc_max_length(w.dc_dataset)
    steps, evaluations = dc_steps(name, section)
    train = encoder_seconds(backbone, steps * dc_section(name, section)["batch_size"], length)
    if DC_VARIANT_MODES[w.dc_variant] in ("full", "social_only"):
        train *= DC_GNN_FACTOR
    evaluated = dc_documents(name) * (0.1 * evaluations + 2 * 0.2 + (1.0 if section == "training" else 0))
    return train + encoder_seconds(backbone, evaluated, length, train=False)


def dc_longest_seconds(name):
    """The dataset's longest job: its warm-up, an MLM variant's training or a sentiment one's."""
    return max([dc_warmup_seconds(SimpleNamespace(dc_dataset=name))]
               + [dc_train_seconds(SimpleNamespace(dc_dataset=name, dc_variant=v)) for v in dc_variants(name)]
               + [dc_train_seconds(SimpleNamespace(dc_dataset=name, dc_variant=v), "sentiment")
                  for v in dc_sentiment_variants(name)])


def dc_train_mem_mb(w, section="training"):
    return encoder_mem_mb(DC.get("backbone"), dc_section(w.dc_dataset, section)["batch_size"],
                          dc_max_length(w.dc_dataset), mlm=section != "sentiment")


def dc_data_seconds(w):
    """Reading the corpus and counting each document's word pieces (~1 ms a document)."""
    return 1e-3 * dc_documents(w.dc_dataset)


def dc_data_mem_mb(w):
    return BASE_MEM_MB + 0.005 * dc_documents(w.dc_dataset)  # ~5 kB a document, read and tokenized


def dc_node2vec_seconds(w):
    n = {"walks_per_node": 10, "walk_length": 80, "epochs": 1,
         **DC.get("node2vec", {}), **DC_DATASETS[w.dc_dataset].get("node2vec", {})}
    return DC_NODE2VEC_S * dc_units(w.dc_dataset) * n["walks_per_node"] * n["walk_length"] * n["epochs"]


# --------------------------------------------------------------- future LM (Li & Flanigan 2024)
# Calibration: config/future_lm_acl.yaml's header and README.md (bench/future_lm_budget.py): the
# 3-layer d 256 LM (d_ff 1,024) takes 0.77 ms per training token (Baseline), scores at 0.18 ms per
# token and generates at 2.0 s per 255 tokens of 5 beams; content METEOR 0.9 s per generation
# against 1,000 references; V_iw 0.046 s per abstract (MiniLM, 256 pieces). They scale here with
# the LM's multiply-adds per token, 4 d^2 + 2 d d_ff per layer plus d V for the output layer,
# counted with the tokenizer's whole vocabulary (MiniLM's 30,522 for the measured LM's 9,208
# restricted pieces: an upper bound, as is the vocabulary's share of the memory).
FL_VOCAB = {"minilm": 30522, "gpt2": 50257}
FL_MEASURED_UNITS = 3 * (4 * 256 ** 2 + 2 * 256 * 1024) + 256 * 30522
FL_TRAIN_S = 0.77e-3 / FL_MEASURED_UNITS  # s per training token and unit
FL_SCORE_S = 0.18e-3 / FL_MEASURED_UNITS  # s per scored token and unit
FL_GENERATE_S = 2.0 / (255 * 5) / FL_MEASURED_UNITS  # s per generated token, beam and unit
FL_CM_S = 0.9 / 1000  # s per generation and reference abstract
FL_CONTEXT_S = 0.046 / 256  # s per abstract piece encoded by MiniLM for V_iw
FL_TOKENS_PER_DOC = 200  # pieces per abstract (ACL: 722k training pieces in 4,193 abstracts: 172)
FL_UNCAPPED_PER_YEAR = 8000  # abstracts of a year without a cap (the filtered Anthology: <= 7,271)
# A training step of each model type against the Baseline's (1.01 s): the measured steps.
FL_TYPE_FACTOR = {"baseline": 1.0, "baseline_n": 1.0, "static_bias": 1.0, "frequency_nolstm": 1.06, "frequency": 1.10,
                  "context": 1.14, "context2": 1.74}


# Pretrained base models by name: (layers, width, d_ff, positions, vocabulary, multiply-adds per
# token). Positions: the longest sequence a batch holds (one abstract's chunk; the chunks of the
# authors' evaluation are GPT-2's 1,024). SmolLM2-135M (Llama: 9 query and 3 key-value heads of
# 64, a gated MLP of three 576 x 1,536 matrices, tied output layer) counts 2 d^2 + 2 d 192 for
# attention and 3 d d_ff for the MLP per layer: 134.5M, its parameter count.
FL_PRETRAINED = {
    "gpt2": (12, 768, 3072, 1024, 50257, 12 * (4 * 768 ** 2 + 2 * 768 * 3072) + 768 * 50257),
    "smollm2-135m": (30, 576, 1536, 1024, 49152,
                     30 * (2 * 576 ** 2 + 2 * 576 * 192 + 3 * 576 * 1536) + 576 * 49152),
}


def fl_lm_size(name):
    """(layers, width, d_ff, positions, vocabulary, multiply-adds per token) of the dataset's LM:
    the scratch LM of `lm` (future_lm/lm.py LMConfig defaults), a registered pretrained base
    model, or any other pretrained base model taken as GPT-2 small."""
    base = fl_section(name, "base_model") or "scratch"
    if base != "scratch":
        return FL_PRETRAINED.get(base, FL_PRETRAINED["gpt2"])
    lm = {"d_model": 128, "n_layers": 2, "d_ff": 512, "context": 128, **(fl_section(name, "lm") or {})}
    vocab = FL_VOCAB.get(fl_section(name, "tokenizer") or "minilm", FL_VOCAB["gpt2"])
    layers, width, d_ff = lm["n_layers"], lm["d_model"], lm["d_ff"]
    return layers, width, d_ff, lm["context"], vocab, layers * (4 * width ** 2 + 2 * width * d_ff) + width * vocab


def fl_units(name):
    return fl_lm_size(name)[5]


def fl_docs(name, split):
    """Abstracts of a split (history, train, dev, test, future): its cap x its years."""
    years = FL_DATASETS[name].get("years") or {}
    cap = fl_section(name, "cap") or {}
    if split == "train":
        first, last = years.get("train", [0, 0])
        n_years = last - first + 1
    elif split == "future":
        n_years = len(years.get("future") or [])
    elif split == "history":
        n_years = fl_max_window(name)
    else:
        n_years = 1 if years.get(split) is not None else 0
    return n_years * (cap.get(split) or FL_UNCAPPED_PER_YEAR)


def fl_fit(name, section):
    """(epochs, batch size) of `pretrain` or `finetune` (future_lm/train.py FitSettings)."""
    s = fl_section(name, section) or {}
    return int(s.get("epochs", 1)), int(s.get("batch_size", 8))


def fl_fit_seconds(name, section, train_share=1.0, points=1, factor=1.0):
    """`points` trainings of `epochs` over the training years (a share of them for Baseline-n),
    dev perplexity before training and after each epoch."""
    epochs, _ = fl_fit(name, section)
    units = fl_units(name)
    train = epochs * train_share * fl_docs(name, "train") * FL_TOKENS_PER_DOC * FL_TRAIN_S * units * factor
    dev = (epochs + 1) * fl_docs(name, "dev") * FL_TOKENS_PER_DOC * FL_SCORE_S * units * factor
    return points * (train + dev)


def fl_pretrain_seconds(w):
    return fl_fit_seconds(w.fl_dataset, "pretrain")


def fl_train_seconds(w):
    """A fine-tune per grid point: Baseline-n's n trains on the last n training years only."""
    name, entry = w.fl_dataset, FL_MODELS[w.fl_model]
    factor = FL_TYPE_FACTOR.get(entry["type"], max(FL_TYPE_FACTOR.values()))
    if entry["type"] == "baseline_n":
        first, last = FL_DATASETS[name].get("years", {}).get("train", [0, 0])
        return sum(fl_fit_seconds(name, "finetune", min(n, last - first + 1) / (last - first + 1))
                   for n in entry.get("n", [1]))
    alphas = entry.get("alpha", [1.0])
    return fl_fit_seconds(name, "finetune", points=len(alphas) if isinstance(alphas, list) else 1, factor=factor)


def fl_longest_seconds(name):
    """The dataset's longest job: pretraining or a model's fine-tune."""
    return max([fl_fit_seconds(name, "pretrain")]
               + [fl_train_seconds(SimpleNamespace(fl_dataset=name, fl_model=m)) for m in fl_models(name)])


def fl_evaluate_seconds(w):
    """Dev, test and the future years scored (the test year again in the authors' chunks), then
    n_generate generations, each with content METEOR against the test abstracts."""
    name = w.fl_dataset
    units = fl_units(name)
    factor = FL_TYPE_FACTOR.get(FL_MODELS[w.fl_model]["type"], max(FL_TYPE_FACTOR.values()))
    ev = fl_section(name, "evaluation") or {}
    gen = {"beams": 5, "max_tokens": 64, **(fl_section(name, "generation") or {})}
    scored = fl_docs(name, "dev") + fl_docs(name, "test") * (2 if ev.get("chunked") else 1) + fl_docs(name, "future")
    generations = int(ev.get("n_generate", 3))
    return (scored * FL_TOKENS_PER_DOC * FL_SCORE_S * units * factor
            + generations * (gen["max_tokens"] * max(1, gen["beams"]) * FL_GENERATE_S * units
                             + fl_docs(name, "test") * FL_CM_S))


def fl_unigram_seconds(w):
    """The Baseline scored on dev, test and the future years under its three fixed biases."""
    name = w.fl_dataset
    scored = fl_docs(name, "dev") + fl_docs(name, "test") + fl_docs(name, "future")
    return 3 * scored * FL_TOKENS_PER_DOC * FL_SCORE_S * fl_units(name)


def fl_context_seconds(w):
    """V_iw: cap_per_year abstracts of each year from the history to the test year, encoded."""
    name = w.fl_dataset
    c = {"cap_per_year": 20, "max_length": 128, "encoder": "minilm", **(fl_section(name, "context") or {})}
    years = FL_DATASETS[name].get("years") or {}
    first, _ = years.get("train", [0, 0])
    n_years = (years.get("test") or first) - first + 1 + fl_max_window(name)
    return (n_years * c["cap_per_year"] * c["max_length"] * FL_CONTEXT_S
            * encoder_size(c["encoder"])[3])


def fl_lm_mem_mb(w, section="finetune"):
    """The LM with its AdamW state (16 B a parameter) and a batch's activations and logits
    (forward and backward: ~20 floats per position, layer and width, plus the vocabulary)."""
    layers, width, _, context, vocab, _ = fl_lm_size(w.fl_dataset)
    _, batch_size = fl_fit(w.fl_dataset, section)
    params = fl_units(w.fl_dataset) + context * width
    return BASE_MEM_MB + (16 * params + 12 * batch_size * context * (vocab + 20 * layers * width)) / 1e6


def fl_context_mem_mb(w):
    """MiniLM and V_iw: a mean embedding per year and vocabulary entry."""
    name = w.fl_dataset
    c = {"max_length": 128, "batch_size": 16, "encoder": "minilm", **(fl_section(name, "context") or {})}
    years = FL_DATASETS[name].get("years") or {}
    first, _ = years.get("train", [0, 0])
    n_years = (years.get("test") or first) - first + 1 + fl_max_window(name)
    width = encoder_size(c["encoder"])[1]
    return (encoder_mem_mb(c["encoder"], c["batch_size"], c["max_length"], mlm=False, train=False)
            + 4 * n_years * fl_lm_size(name)[4] * width / 1e6)


"""Temporal word biases added to the language model's softmax (Li & Flanigan 2024, §3).

Every model changes only the logits of the base LM (H_k: its output at position k, E_w: the
tied input/output embedding of entry w, W = E unless `output_layer: untied_new`):

    logit_kw = W_wᵀ H_k + α B_(i)(k)w

α (`alpha_scope`): the paper has α only in Eq. 10 (Context²), "a tuned hyperparameter" (a grid
1 ... 1e-5, or learned from 1); `alpha_scope: context2` (default) keeps it there, and every
other bias is added as it is (α fixed at 1; a grid or alpha_learned on such a model is refused).
`alpha_scope: all` scales every bias by α (this code's first reading). For Frequency, Context and
the static bias, α (Aᵀh + a) is only a reparametrisation of the learned A and a (and α b of b):
a learned α adds no function the model could not already represent, it changes the optimiser's
steps (Adam moves each parameter by about lr, so α rescales the bias's effective learning rate
and initial size); a fixed α is the same as another initial scale of A. Only for
Frequency-NoLSTM, which has no learned weight, does α change what the model can express.
So Frequency-NoLSTM keeps α under either scope: it is that model's feature weight (the paper's
α grid is searched "for each model"), not an extra scale.
α = 0 gives exactly the base model's logits. Year i's history is the `window` (m) years before
it (data.history_years); the bias is computed once per year.

Readings of the equations (the printed dimensions do not agree; these are the ones we use):

- Baseline / Baseline-n: B = 0 (Baseline-n: trained on the n most recent training years, from
  the start point `start` of train.start_checkpoint).
- Static bias (a control, not in the paper): B_w = b_w, one learned bias per vocabulary entry,
  the same for every year (initialised at 0, so training starts from the base LM). The base LM
  has no output bias, so a learned per-word bias can lower perplexity for reasons that have
  nothing to do with time (the training years' unigram prior, the fine-tuning domain); a temporal
  model has to beat this one to show that time helps.
- Frequency-NoLSTM: B_iw = log f_{i-1,w} - mean_w log f_{i-1,w} (the previous year's smoothed log
  frequency, centred; softmax ignores the shift). The authors instead use one frozen bias from
  2017-2019 pooled counts for every document (future_language_model_trainer.py:400-410:
  `unigram_frequency-2019-cut-2019-start-2017`, add-one smoothed log probabilities, min-max
  scaled into ±1/sqrt(768) by LinearWithCustomBias, model.py:60-73): `nolstm_bias: pooled` with
  `pooled_years: 3` (the counts of the last 3 training years summed, then smoothed as every
  year's; with `scaling: minmax` their scaling too). The same bias for every year: a training
  document of 2005 sees 2017-2019 statistics, a look into its future that the authors' model has.
- Frequency (Eq. 6): B_iw = Aᵀ LSTM(log f_{i-m,w}, ..., log f_{i-1,w}) + a, the LSTM (hidden 32)
  shared across words, run as a batch over the vocabulary, its last hidden state; A ∈ R^32 and
  the scalar a as the authors' Linear(32, 1) (model.py:478-480). `scaling: minmax` feeds the
  authors' per-year min-max scaled log f (into ±1/sqrt(768)) instead.
- Context (Eqs. 7-8): B_iw = Aᵀ LSTM(V_{i-m,w}, ..., V_{i-1,w}) + a, V the year's mean contextual
  vector (context.py; zeros in a year where w does not occur). Two options of this code, off by
  default (the paper's reading): `presence_flag: true` appends p ∈ {0, 1}, whether w occurs in
  that year, to V (an absent word's zero vector is otherwise indistinguishable from a word whose
  mean vector is near 0); `context_proj: k` projects [V; p] to k dimensions before the LSTM
  (first chosen at 64 to make the LSTM over the whole vocabulary cheaper on a CPU: measured on a
  9,208-entry vocabulary, m = 2, one thread, forward + backward 0.087 s with 385 -> 64 against
  0.16 s without, per training batch of ~1.0-1.2 s).
  The authors' form (`context_bias: embedding`, model.py:844-845, 939-940): the LSTM state is
  projected to R^d and dotted with H_k, B_ikw = H_kᵀ M h_iw, per position.
- Context² (Eqs. 9-10), literal reading (`gate: per_word`, default): h_iw = P LSTM(...) ∈ R^d,
  s_iw = E_wᵀ h_iw (Eq. 9's E_wᵀ B_iw, a scalar), B̃_iw = s_iw a with a ∈ R^d, then
      B_ikw = σ(H_kᵀ C B̃_iw) (E_wᵀ D B̃_iw) = σ(s_iw g_k) s_iw e_w,  g_k = H_kᵀ C a, e_w = E_wᵀ D a,
  an outer product over positions and words (no extra d factor), α applied outside as above.
  B_ikw depends on H_k only, so a document's bias does not depend on how it is padded.
  The authors' form (`gate: summed_vocab`, model.py:2162-2172): one vector per year summed over
  the vocabulary, b̃_i = Σ_w E_w (aᵀ h_iw); a per-position gate σ(H_kᵀ C b̃_i), multiplied by the
  padded sequence length T when `length_factor: true` (their bmm over a T×T matrix); the vector
  D b̃_i added to H_k before the output layer, i.e. B_ikw = gate_k W_wᵀ D b̃_i. Their new,
  untied, randomly initialised output layer is `output_layer: untied_new` (any model).

No bias on UNK (nor PAD, BOS), in every biased model, the static one included: with a vocabulary
restricted to the pieces of the training years, UNK is rare in those years by construction and
common in later ones, so a bias learned from UNK's frequency would exploit how the vocabulary
was built, not how language changed (in a first smoke run, Frequency-NoLSTM "gained" 33% test
perplexity that way). Every model predicts UNK with the base LM's logit alone.

Not reproduced as options: the authors' use of a document's own-year statistics when fewer than
m past years exist and negative year indices wrapping to future years (both dormant with
training from 2003 and m <= 3); here years before the corpus are "absent" (uniform frequency,
zero vectors, p = 0).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from ..settings import settings_from_dict
from .data import history_years
from .frequency import scale_minmax, smoothed_log_frequency
from .model_types import (ALPHA_SCOPES, BASELINE_N_STARTS, BIASED, MODEL_TYPES, NEEDS_CONTEXT,  # noqa: F401
                          TEMPORAL, alpha_applies, check_model_entry)


@dataclass
class BiasSpec:
    type: str = "baseline"
    window: int = 2                 # m: history years
    alpha: float = 1.0              # scale of the bias (one grid point)
    alpha_learned: bool = False     # α a parameter initialised at `alpha`
    alpha_scope: str = "context2"   # context2: α only in Eq. 10 (the paper) | all: α on every bias
    lstm_hidden: int = 32
    context_proj: int | None = None  # Context/Context²: None = the LSTM over V_iw (the paper); k: projected to k first
    presence_flag: bool = False     # Context/Context²: append whether w occurs in the year to V_iw
    scaling: str = "none"           # none | minmax: the authors' per-year min-max scaling of log f
    output_layer: str = "tied"      # tied | untied_new (the authors' new output layer)
    context_bias: str = "scalar"    # Context: scalar (Eq. 8) | embedding (the authors' H_kᵀ M h_iw)
    gate: str = "per_word"          # Context²: per_word (Eqs. 9-10) | summed_vocab (the authors')
    length_factor: bool = False     # Context², summed_vocab: multiply the gate by the padded length T
    n: int | None = None            # Baseline-n: training years (one grid point)
    nolstm_bias: str = "previous_year"  # Frequency-NoLSTM: previous_year | pooled (the authors' one frozen bias)
    pooled_years: int = 3           # nolstm_bias pooled: the last training years pooled (the authors: 2017-2019)
    start: str = "base"             # Baseline-n: base (the paper) | pretrained (train.start_checkpoint)

    CHOICES = {"type": MODEL_TYPES, "scaling": ("none", "minmax"), "output_layer": ("tied", "untied_new"),
               "context_bias": ("scalar", "embedding"), "gate": ("per_word", "summed_vocab"),
               "nolstm_bias": ("previous_year", "pooled"), "alpha_scope": ALPHA_SCOPES, "start": BASELINE_N_STARTS}

    def __post_init__(self):
        for key, allowed in self.CHOICES.items():
            if getattr(self, key) not in allowed:
                raise ValueError(f"{key} {getattr(self, key)!r} is not one of {allowed}")
        if self.type == "baseline_n" and not self.n:
            raise ValueError("baseline_n needs n (training years)")
        if self.length_factor and self.gate != "summed_vocab":
            raise ValueError("length_factor is the authors' summed_vocab gate's defect: set gate: summed_vocab")
        if self.pooled_years < 1:
            raise ValueError(f"pooled_years must be at least 1, got {self.pooled_years}")
        if self.context_proj is not None and (isinstance(self.context_proj, bool) or int(self.context_proj) < 1):
            raise ValueError(f"context_proj must be null (the paper: no projection) or an integer >= 1, "
                             f"got {self.context_proj!r}")
        check_model_entry(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "BiasSpec":
        return settings_from_dict(cls, d, "model")

    def to_dict(self) -> dict:
        return asdict(self)


FREQUENCY_INPUTS = ("as_trained", "unscaled")


def evaluation_scaling(spec: BiasSpec, frequency_input: str = "as_trained") -> str:
    """The log-f scaling a trained model is evaluated with: the one it was trained with
    (`as_trained`), or, with `unscaled`, the authors' mismatch (compute_perplexity.py:288-299 feed
    the Frequency model `is_scalling=False` log probabilities although it was trained on min-max
    scaled ones): raw log f for a Frequency model. Other models are evaluated as trained (the
    authors' Frequency-NoLSTM bias is a stored parameter, unaffected)."""
    if frequency_input not in FREQUENCY_INPUTS:
        raise ValueError(f"frequency_input {frequency_input!r} is not one of {FREQUENCY_INPUTS}")
    if frequency_input == "unscaled" and spec.type == "frequency":
        return "none"
    return spec.scaling


class YearFeatures:
    """Per-year statistics as tensors, with an 'absent' row for years outside the corpus."""

    def __init__(self, freq: dict, ctx: dict | None, last_train_year: int, window: int = 2,
                 shortcut: bool = False, scaling: str = "none", bound: float = 1 / math.sqrt(768)):
        self.last_train_year, self.window, self.shortcut = int(last_train_year), int(window), bool(shortcut)
        years = [int(y) for y in freq["years"]]
        self.row = {y: i for i, y in enumerate(years)}
        log_f = np.asarray(freq["log_f"], dtype=np.float64)
        absent = np.full((1, log_f.shape[1]), -math.log(log_f.shape[1]))
        log_f = np.concatenate([log_f, absent])
        self.raw_log_f = torch.tensor(log_f, dtype=torch.float32)
        self.log_f = torch.tensor(scale_minmax(log_f, bound) if scaling == "minmax" else log_f, dtype=torch.float32)
        self.scaling, self.bound = scaling, bound
        self.counts = np.asarray(freq["counts"]) if "counts" in freq else None
        self.smoothing = float(freq.get("smoothing", 1.0))
        self.vocab_size = log_f.shape[1]
        # 1 where a temporal bias may act, 0 for PAD, UNK and BOS (see the module docstring)
        self.bias_mask = torch.ones(self.vocab_size)
        self.bias_mask[torch.as_tensor(np.asarray(freq.get("no_bias", []), dtype=np.int64))] = 0.0
        self.ctx = self.ctx_rows = None
        if ctx is not None:
            self.ctx_rows = {int(y): i for i, y in enumerate(ctx["years"])}
            self.ctx = np.asarray(ctx["vectors"])            # [Y, V, D] float16
            self.present = np.asarray(ctx["counts"]) > 0     # [Y, V]

    def history(self, year: int) -> list[int]:
        return history_years(int(year), self.window, self.last_train_year, self.shortcut)

    def freq_history(self, year: int) -> torch.Tensor:
        """[V, m, 1] log f of the history years (absent years: uniform)."""
        rows = [self.row.get(y, len(self.row)) for y in self.history(year)]
        return self.log_f[rows].T.unsqueeze(-1)

    def previous_log_f(self, year: int) -> torch.Tensor:
        """[V] log f of the last history year."""
        return self.log_f[self.row.get(self.history(year)[-1], len(self.row))]

    def pooled_log_f(self, n_years: int) -> torch.Tensor:
        """[V] smoothed log f of the counts of the last `n_years` training years summed (scaled
        as the other years are): the authors' one Frequency-NoLSTM bias."""
        if self.counts is None:
            raise ValueError("the pooled Frequency-NoLSTM bias needs the per-year counts (frequency.npz)")
        years = [y for y in range(self.last_train_year - n_years + 1, self.last_train_year + 1) if y in self.row]
        if not years:
            raise ValueError(f"no corpus year among the last {n_years} training years up to {self.last_train_year}")
        pooled = self.counts[[self.row[y] for y in years]].sum(axis=0, keepdims=True)
        log_f = smoothed_log_frequency(pooled, self.smoothing)
        if self.scaling == "minmax":
            log_f = scale_minmax(log_f, self.bound)
        return torch.tensor(log_f[0], dtype=torch.float32)

    def context_history(self, year: int, presence_flag: bool = False) -> torch.Tensor:
        """[V, m, D] V_iw of the history years (absent: zeros); [V, m, D + 1] with the presence flag."""
        if self.ctx is None:
            raise ValueError("this model needs the per-year contextual embeddings (context.npz)")
        steps = []
        for y in self.history(year):
            if y in self.ctx_rows:
                r = self.ctx_rows[y]
                vec = torch.from_numpy(self.ctx[r].astype(np.float32))
                flag = torch.from_numpy(self.present[r].astype(np.float32)).unsqueeze(-1)
            else:
                vec = torch.zeros(self.vocab_size, self.ctx.shape[2])
                flag = torch.zeros(self.vocab_size, 1)
            steps.append(torch.cat([vec, flag], dim=-1) if presence_flag else vec)
        return torch.stack(steps, dim=1)


class HistoryLSTM(nn.Module):
    """LSTM over each vocabulary entry's history, batched over the vocabulary: [V, m, in] -> [V, h]."""

    def __init__(self, n_in: int, hidden: int, proj: int | None = None):
        super().__init__()
        self.proj = nn.Linear(n_in, proj) if proj else None
        self.lstm = nn.LSTM(proj or n_in, hidden, batch_first=True)

    def forward(self, x):
        if self.proj is not None:
            x = self.proj(x)
        return self.lstm(x)[0][:, -1]


class TemporalLM(nn.Module):
    """Base LM + the bias of `spec` (temporal, or the static control); `logits(ids, year, past)`
    for one year per call."""

    def __init__(self, lm: nn.Module, spec: BiasSpec, features: YearFeatures | None = None,
                 context_dim: int = 384):
        super().__init__()
        self.lm, self.spec, self.features = lm, spec, features
        if features is not None and features.ctx is not None:
            context_dim = features.ctx.shape[2]
        d, h = lm.d_model, spec.lstm_hidden
        vocab = lm.output_weight.shape[0]
        self.alpha = nn.Parameter(torch.tensor(float(spec.alpha)), requires_grad=spec.alpha_learned)
        self.head = None
        if spec.output_layer == "untied_new":
            self.head = nn.Parameter(torch.empty(vocab, d))
            nn.init.kaiming_uniform_(self.head, a=math.sqrt(5))
        t = spec.type
        if t == "static_bias":  # one bias per entry, no time; 0 at the start: the base LM's logits
            self.static = nn.Parameter(torch.zeros(vocab))
        elif t == "frequency":
            self.history_net = HistoryLSTM(1, h)
            self.A = nn.Linear(h, 1)
        elif t in NEEDS_CONTEXT:
            self.history_net = HistoryLSTM(context_dim + int(spec.presence_flag), h, spec.context_proj)
            if t == "context" and spec.context_bias == "scalar":
                self.A = nn.Linear(h, 1)
            elif t == "context":
                self.M = nn.Linear(h, d, bias=False)
            elif spec.gate == "per_word":
                self.P = nn.Linear(h, d, bias=False)
                self.a = nn.Parameter(torch.randn(d) / math.sqrt(d))
                self.C = nn.Linear(d, d, bias=False)
                self.D = nn.Linear(d, d, bias=False)
            else:
                self.a = nn.Linear(h, 1, bias=False)
                self.C = nn.Linear(d, d, bias=False)
                self.D = nn.Linear(d, d, bias=False)

    # --- parameters: the base LM's, and the new ones (their own learning rate)
    def new_parameters(self):
        return [p for n, p in self.named_parameters() if not n.startswith("lm.") and p.requires_grad]

    def lm_parameters(self):
        return [p for p in self.lm.parameters() if p.requires_grad]

    @property
    def output_weight(self) -> torch.Tensor:
        return self.head if self.head is not None else self.lm.output_weight

    def year_state(self, year: int):
        """What the bias needs of year `year` (computed once per batch/generation)."""
        t, spec, f = self.spec.type, self.spec, self.features
        device = self.output_weight.device
        if t in ("baseline", "baseline_n"):
            return None
        if t == "static_bias":
            return self.static
        if t == "frequency_nolstm":
            if spec.nolstm_bias == "pooled":
                prev = f.pooled_log_f(spec.pooled_years).to(device)
            else:
                prev = f.previous_log_f(year).to(device)
            return prev - prev.mean()
        if t == "frequency":
            return self.A(self.history_net(f.freq_history(year).to(device))).squeeze(-1)
        hist = self.history_net(f.context_history(year, spec.presence_flag).to(device))  # [V, h]
        if t == "context":
            return self.A(hist).squeeze(-1) if spec.context_bias == "scalar" else self.M(hist)  # [V] | [V, d]
        E = self.lm.output_weight                                         # the tied input embedding
        if spec.gate == "per_word":
            s = (E * self.P(hist)).sum(-1)                                # [V] s_iw = E_wᵀ h_iw
            return {"s": s, "Ca": self.C(self.a), "e": E @ self.D(self.a)}        # e_w = E_wᵀ D a
        summed = E.T @ self.a(hist).squeeze(-1)                           # [d] b̃_i = Σ_w E_w aᵀh_iw
        return {"summed": summed, "C_summed": self.C(summed), "e": self.output_weight @ self.D(summed)}

    def bias(self, H: torch.Tensor, state) -> torch.Tensor | None:
        """B for hidden states H [B, T, d]: [V] (per year) or [B, T, V] (per position)."""
        t, spec = self.spec.type, self.spec
        if state is None:
            return None
        if t in ("static_bias", "frequency_nolstm", "frequency") or (t == "context" and spec.context_bias == "scalar"):
            return state
        if t == "context":
            return H @ state.T
        if spec.gate == "per_word":
            g = H @ state["Ca"]                                           # [B, T]
            s = state["s"]
            return torch.sigmoid(g.unsqueeze(-1) * s) * (s * state["e"])  # [B, T, V]
        gate = torch.sigmoid(H @ state["C_summed"])                       # [B, T]
        if spec.length_factor:
            gate = gate * H.shape[1]
        return gate.unsqueeze(-1) * state["e"]

    def logits(self, ids: torch.Tensor, year: int, past=None, state=None):
        """(logits [B, T, V], past'). `state`: year_state(year), when the caller keeps it."""
        H, presents = self.lm.hidden(ids, past)
        out = H @ self.output_weight.T
        if self.spec.type in BIASED:
            if state is None:
                state = self.year_state(year)
            out = out + self.alpha * self.bias(H, state) * self.features.bias_mask.to(out.device)
        return out, presents

    def forward(self, ids, year):
        return self.logits(ids, year)[0]

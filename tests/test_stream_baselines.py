"""Stream-level baselines (BiLSTM, SWNU, Seq-Sig-Net) and their log-signature helpers."""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import yaml

from tempoformer.models.bilstm import BiLSTM
from tempoformer.models.seqsignet import SeqSigNet, SeqSigNetConfig
from tempoformer.models.signature import (
    expanding_log_signatures,
    log_signature_dim,
    path_log_signature,
)
from tempoformer.models.swnu import SWNU, SWNUConfig

D = 384  # SBERT all-MiniLM-L6-v2 embedding size, as the training code passes

# pysiglib copies view tensors (e.g. autograd's gradients) before use and says so once.
pytestmark = pytest.mark.filterwarnings("ignore:Detected a non-contiguous:UserWarning")


# --- log-signature helpers -------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3])
def test_expanding_log_signatures_equal_per_prefix_log_signatures(depth):
    torch.manual_seed(0)
    path = torch.randn(3, 7, 4, dtype=torch.float64)
    expanding = expanding_log_signatures(path, depth)
    assert expanding.shape == (3, 7, log_signature_dim(4, depth))
    for t in range(7):
        direct = path_log_signature(path[:, : t + 1], depth)
        torch.testing.assert_close(expanding[:, t], direct, atol=1e-5, rtol=0)
    assert expanding[:, 0].abs().max() == 0  # a single point has a zero log-signature


def test_log_signature_dim_matches_output_width():
    assert log_signature_dim(3, 4) == 32  # Witt's formula: 3 + 3 + 8 + 18
    path = torch.randn(2, 5, 3)
    assert path_log_signature(path, 4).shape == (2, 32)


def test_constant_left_padding_leaves_log_signatures_unchanged():
    torch.manual_seed(1)
    path = torch.randn(2, 5, 3, dtype=torch.float64)
    garbage = 10 * torch.randn(2, 4, 3, dtype=torch.float64)
    padded = torch.cat([garbage, path], dim=1)
    mask = torch.cat([torch.zeros(2, 4, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)], 1)

    expected = path_log_signature(path, 3)
    torch.testing.assert_close(path_log_signature(padded, 3, mask), expected, atol=1e-5, rtol=0)
    # Padding held constant at the first real point, explicitly: same result.
    held = torch.cat([path[:, :1].expand(2, 4, 3), path], dim=1)
    torch.testing.assert_close(path_log_signature(held, 3), expected, atol=1e-5, rtol=0)
    # Without the mask the garbage is part of the path, so the check above can fail.
    assert (path_log_signature(padded, 3) - expected).abs().max() > 1e-2

    streamed = expanding_log_signatures(padded, 3, mask)
    assert streamed[:, :4].abs().max() == 0
    torch.testing.assert_close(
        streamed[:, 4:], expanding_log_signatures(path, 3), atol=1e-5, rtol=0
    )


def test_log_signature_gradients_match_finite_differences():
    torch.manual_seed(2)
    path = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p: path_log_signature(p, 3), (path,))
    assert torch.autograd.gradcheck(lambda p: expanding_log_signatures(p, 3), (path,))


# --- models ----------------------------------------------------------------------------------

MODELS = {
    "bilstm": lambda: BiLSTM(input_dim=D, num_labels=2, hidden_dim=16),
    "swnu": lambda: SWNU.from_params(
        input_dim=D, num_labels=2, conv_dim=6, swnu_hidden_dim=10, ffn_hidden_dims=[32, 32]
    ),
    "swnu_lstm_pooling": lambda: SWNU(
        SWNUConfig(
            input_dim=D,
            num_labels=2,
            conv_dim=6,
            swnu_hidden_dim=10,
            ffn_hidden_dims=[32, 32],
            pooling="lstm",
        )
    ),
    "seqsignet": lambda: SeqSigNet.from_params(
        input_dim=D,
        num_labels=2,
        conv_dim=6,
        swnu_hidden_dim=10,
        lstm_hidden_dim=16,
        ffn_hidden_dims=[32, 32],
    ),
}


def make_windows(lengths: list[int], w: int, seed: int = 0):
    """Left-padded windows as the training code builds them: zeros in padding slots, time =
    log-gap to the current post (decreasing to 0 at the current post)."""
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    mask = torch.zeros(B, w, dtype=torch.bool)
    for i, n in enumerate(lengths):
        mask[i, w - n :] = True
    x = torch.randn(B, w, D, generator=g) * mask[..., None]
    gaps = torch.rand(B, w, generator=g).flip(1).cumsum(1).flip(1) * 3  # decreasing
    time = torch.where(mask, gaps - gaps[:, -1:], torch.zeros(()))
    return x, mask, time


@pytest.mark.parametrize("name", MODELS)
def test_output_shape(name):
    torch.manual_seed(0)
    x, mask, time = make_windows([8, 5, 1], w=8)
    assert MODELS[name]()(x, mask, time).shape == (3, 2)


@pytest.mark.parametrize("name", MODELS)
def test_left_padding_never_changes_logits(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    lengths = [8, 5, 1, 3]
    x, mask, time = make_windows(lengths, w=8)
    with torch.no_grad():
        logits = model(x, mask, time)

        # Four more padding slots, and random garbage in every padding slot's x and time.
        extra = 4
        mask_pad = F.pad(mask, (extra, 0), value=False)
        garbage_x, garbage_time = 5 * torch.randn(4, 12, D), 7 * torch.rand(4, 12)
        x_pad = torch.where(mask_pad[..., None], F.pad(x, (0, 0, extra, 0)), garbage_x)
        time_pad = torch.where(mask_pad, F.pad(time, (extra, 0)), garbage_time)
        torch.testing.assert_close(model(x_pad, mask_pad, time_pad), logits, atol=1e-5, rtol=0)

        # Each stream alone, with no padding at all.
        for i, n in enumerate(lengths):
            alone = model(x[i : i + 1, -n:], mask[i : i + 1, -n:], time[i : i + 1, -n:])
            torch.testing.assert_close(alone[0], logits[i], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", MODELS)
def test_gradients_reach_every_parameter(name):
    torch.manual_seed(0)
    model = MODELS[name]()
    x, mask, time = make_windows([8, 5, 1, 3], w=8)
    F.cross_entropy(model(x, mask, time), torch.tensor([0, 1, 1, 0])).backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", ["swnu", "seqsignet"])
def test_time_enters_the_signature_models(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    x, mask, time = make_windows([8, 6], w=8)
    shifted = time.clone()
    shifted[:, 3] += 2.0  # a real post in both windows, not the previous one
    with torch.no_grad():
        assert (model(x, mask, time) - model(x, mask, shifted)).abs().max() > 1e-6


@pytest.mark.parametrize("name", MODELS)
def test_overfits_sixteen_examples(name):
    torch.manual_seed(0)
    model = MODELS[name]()
    x, mask, time = make_windows([6, 4, 2, 2, 6, 5, 3, 6] * 2, w=6, seed=3)
    # One shared current post: the labels can only be learnt from the history stream.
    x[:, -1] = x[0, -1]
    labels = torch.tensor([0, 1] * 8)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(300):
        optimiser.zero_grad()
        loss = F.cross_entropy(model(x, mask, time), labels)
        loss.backward()
        optimiser.step()
        first = loss.item() if first is None else first
        if loss.item() < 0.2 * first:
            break
    assert loss.item() < 0.2 * first, (first, loss.item())


def test_seqsignet_units_are_anchored_at_the_current_post():
    model = SeqSigNet.from_params(
        input_dim=1, num_labels=2, conv_dim=2, swnu_hidden_dim=3, lstm_hidden_dim=4,
        ffn_hidden_dims=[4], unit_size=5, unit_shift=3,
    )
    w = 10
    x = torch.arange(w, dtype=torch.float32).view(1, w, 1)
    mask = torch.ones(1, w, dtype=torch.bool)
    x_units, mask_units, _ = model.split_units(x, mask, torch.zeros(1, w))
    # 3 units of 5 posts, 3 apart, the last ending at slot 9; one padding slot in front.
    assert x_units[0, :, :, 0].tolist() == [[0, 0, 1, 2, 3], [2, 3, 4, 5, 6], [5, 6, 7, 8, 9]]
    assert mask_units[0, 0].tolist() == [False, True, True, True, True]
    assert mask_units[0, 1:].all()


# --- configs ---------------------------------------------------------------------------------

# Computed on the keyword-argument constructors the committed results were trained with (commit
# 517691f): torch.manual_seed(0), then the model; sha256 over (name, float32 bytes) of every
# parameter in named_parameters() order, and the eval-mode logits of REFERENCE_WINDOWS. A change
# in the order submodules are created draws different initial weights and breaks the hash.
REFERENCES = {
    "swnu": (
        SWNU,
        dict(input_dim=16, num_labels=2, conv_dim=3, swnu_hidden_dim=4, ffn_hidden_dims=[16, 8]),
        "ec8b90846eb035c6c4a566e1415c341fe61f773ee59d9bd8b687d132be2a745e",
        [-0.2281966507434845, 0.2526055574417114, -0.2301510125398636, 0.24678215384483337,
         -0.2407723367214203, 0.2610822021961212],
    ),
    "swnu_lstm": (
        SWNU,
        dict(input_dim=16, num_labels=3, conv_dim=3, swnu_hidden_dim=4, ffn_hidden_dims=12,
             pooling="lstm", concat_time=False, sig_depth=2, time_scale=0.5, dropout=0.2),
        "d4a4d70c4cd6dc2f556a512614fd76ee840414b52f4faa2aee5aad03c9a49fe6",
        [-0.3176930546760559, 0.19299361109733582, -0.0327848419547081, -0.6022540926933289,
         0.6678380370140076, -0.3142259120941162, -0.22897616028785706, 0.015122085809707642,
         -0.18950849771499634],
    ),
    "seqsignet": (
        SeqSigNet,
        dict(input_dim=16, num_labels=2, conv_dim=3, swnu_hidden_dim=4, lstm_hidden_dim=5,
             ffn_hidden_dims=[12], unit_size=4, unit_shift=2),
        "f08183b6281fbf3122683a8def2a900399972d39c54459fcac394f53cff2da03",
        [-0.04345952719449997, 0.10665242373943329, 0.19271835684776306, 0.18570412695407867,
         0.07185784727334976, -0.04626337066292763],
    ),
}


def reference_windows():
    """Three windows of 7 slots (7, 4 and 1 real posts) of 16-d vectors."""
    g = torch.Generator().manual_seed(1)
    mask = torch.tensor([[True] * 7, [False] * 3 + [True] * 4, [False] * 6 + [True]])
    x = torch.randn(3, 7, 16, generator=g) * mask[..., None]
    gaps = torch.rand(3, 7, generator=g).flip(1).cumsum(1).flip(1) * 3
    time = torch.where(mask, gaps - gaps[:, -1:], torch.zeros(()))
    return x, mask, time


def parameter_digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode())
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("name", REFERENCES)
def test_config_construction_keeps_the_committed_initialisation(name):
    cls, params, digest, logits = REFERENCES[name]
    x, mask, time = reference_windows()
    for build in (lambda: cls.from_params(**params), lambda: cls(cls.config_class(**params))):
        torch.manual_seed(0)
        model = build().eval()
        assert parameter_digest(model) == digest
        with torch.no_grad():
            out = model(x, mask, time)
        # Bit-identical on the machine the references were taken on; the tolerance only allows
        # for another CPU's BLAS rounding the same weights differently.
        torch.testing.assert_close(out.flatten(), torch.tensor(logits), rtol=0, atol=1e-6)


def test_seqsignet_config_extends_the_swnu_config():
    shared = {f.name for f in dataclasses.fields(SWNUConfig)}
    own = {f.name for f in dataclasses.fields(SeqSigNetConfig)} - shared
    assert shared >= {"conv_dim", "swnu_hidden_dim", "ffn_hidden_dims", "dropout", "sig_depth",
                      "pooling", "concat_time", "time_scale"}
    assert own == {"lstm_hidden_dim", "unit_size", "unit_shift"}
    for config in (SWNUConfig, SeqSigNetConfig):
        hints = typing.get_type_hints(config)
        assert set(hints) == {f.name for f in dataclasses.fields(config)}


def test_configs_reject_bad_settings():
    unit = dict(input_dim=4, num_labels=2, conv_dim=2, swnu_hidden_dim=3, ffn_hidden_dims=[4])
    with pytest.raises(ValueError, match="pooling must be one of"):
        SWNUConfig(**unit, pooling="mean")
    with pytest.raises(ValueError, match="pooling must be one of"):
        SeqSigNetConfig(**unit, lstm_hidden_dim=4, pooling="mean")
    with pytest.raises(ValueError, match="unit_shift <= unit_size"):
        SeqSigNetConfig(**unit, lstm_hidden_dim=4, unit_size=3, unit_shift=4)
    with pytest.raises(TypeError, match="lstm_hidden_dim"):
        SWNU.from_params(**unit, lstm_hidden_dim=4)  # a Seq-Sig-Net setting is no SWNU one
    with pytest.raises(TypeError, match="lstm_hidden_dim"):
        SeqSigNet.from_params(**unit)  # required, no default


def test_paper_configs_params_are_config_fields():
    """Every swnu / seqsignet param and grid key in the configs is a field of the model's config
    or a training setting; input_dim and num_labels come from the run, never from a config."""
    from tempoformer.training.loop import TrainSettings

    settings = {f.name for f in dataclasses.fields(TrainSettings)}
    fields = {t: {f.name for f in dataclasses.fields(c)} - {"input_dim", "num_labels"}
              for t, c in (("swnu", SWNUConfig), ("seqsignet", SeqSigNetConfig))}
    seen = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "config").glob("*.yaml")):
        for name, entry in (yaml.safe_load(path.read_text()).get("models") or {}).items():
            kind = (entry or {}).get("type", name)
            if kind not in fields:
                continue
            params = dict(entry.get("params") or {})
            keys = set(params.pop("grid", {})) | set(params)
            assert keys <= fields[kind] | settings, (path.name, name, keys - fields[kind] - settings)
            seen += 1
    assert seen >= 6  # lrs, topic_shift_mi, talklife: swnu and seqsignet each


@pytest.mark.parametrize("model,grid", [
    ("swnu", {"swnu_hidden_dim": [4, 5]}),
    ("seqsignet", {"lstm_hidden_dim": [4]}),
])
def test_training_builds_the_models_from_config_params(tmp_path, make_posts, model, grid):
    """The training entry point turns a config's params (fixed and grid) into the model's config:
    every grid point trains, and a key the config lacks is refused before any training."""
    import numpy as np

    from tempoformer.data.folds import make_folds
    from tempoformer.data.posts import write_parquet_atomic
    from tempoformer.data.windows import build_windows
    from tempoformer.training.run import TrainRun, run_training

    rng = np.random.default_rng(0)
    posts = make_posts({f"t{k}": [(60 * i, "S" if rng.random() < 0.4 else "N") for i in range(6)]
                        for k in range(10)})
    write_parquet_atomic(posts, tmp_path / "posts.parquet")
    write_parquet_atomic(make_folds(posts, 5, 0.25, 0), tmp_path / "folds.parquet")
    write_parquet_atomic(build_windows(posts, 6), tmp_path / "streams.parquet")
    np.save(tmp_path / "emb.npy", rng.normal(size=(posts.height, 8)).astype(np.float32))

    def run(params):
        return run_training(TrainRun(
            posts_path=tmp_path / "posts.parquet", folds_path=tmp_path / "folds.parquet", out_dir=tmp_path / "run",
            model=model, params=params, labels=["S", "N"], window=6, fold=0, seed=0,
            streams_path=tmp_path / "streams.parquet", embeddings_path=tmp_path / "emb.npy", threads=1, device="cpu"))

    fixed = {"epochs": 1, "batch_size": 8, "conv_dim": 3, "swnu_hidden_dim": 4, "ffn_hidden_dims": [6],
             "time_scale": 0.5}
    params = {**{k: v for k, v in fixed.items() if k not in grid}, "grid": {"lr": [1e-3], **grid}}
    if model == "seqsignet":
        params.update(unit_size=3, unit_shift=2)
    metrics = run(params)
    assert [point["hp"] for point in metrics["grid"]] == [{"lr": 1e-3, **dict(zip(grid, v))}
                                                         for v in zip(*grid.values())]
    with pytest.raises(ValueError, match=f"models.{model}.params.*'lstm_size'"):
        run({**params, "lstm_size": 4})

"""The authors' input path of SWNU / Seq-Sig-Net as a named option (issue 68): `path_reduction`
"none" (default) computes what the models computed before; "umap" makes the unit read the
appended UMAP columns of `tempoformer reduce-embeddings` and the head the SBERT vector; the
workflow gives those runs the reduced file, and leaves every other run's fingerprint alone."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util

import numpy as np
import pytest
import torch
import yaml

from conftest import REPO, snakemake
from tempoformer.cli import main as cli
from tempoformer.fingerprint import RunFingerprints
from tempoformer.models.registry import validate_params
from tempoformer.models.seqsignet import SeqSigNet
from tempoformer.models.swnu import SWNU, SWNUConfig, previous_gap

HAS_UMAP = importlib.util.find_spec("umap") is not None
needs_umap = pytest.mark.skipif(not HAS_UMAP, reason="umap-learn is an optional extra: pip install -e .[umap]")

D, R = 24, 5  # post vector width, reduced columns
MODELS = {
    "swnu": (SWNU, dict(num_labels=2, conv_dim=3, swnu_hidden_dim=4, ffn_hidden_dims=[16, 8])),
    "seqsignet": (SeqSigNet, dict(num_labels=2, conv_dim=3, swnu_hidden_dim=4, ffn_hidden_dims=[12],
                                  lstm_hidden_dim=5, unit_size=4, unit_shift=2)),
}


def windows(width: int, seed: int = 1):
    """Four windows of 9 slots (9, 5, 2 and 1 real posts) of `width`-d vectors."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([9, 5, 2, 1])
    mask = torch.arange(9)[None, :] >= (9 - lengths)[:, None]
    x = torch.randn(4, 9, width, generator=g) * mask[..., None]
    gaps = torch.rand(4, 9, generator=g).flip(1).cumsum(1).flip(1) * 3
    time = torch.where(mask, gaps - gaps[:, -1:], torch.zeros(()))
    return x, mask, time


def build(name, seed=0, **params):
    cls, base = MODELS[name]
    torch.manual_seed(seed)
    return cls.from_params(**{**base, **params}).eval()


def unit_outputs(model, x, mask, time):
    """(logits, what the SWNU unit returned) of one forward pass."""
    seen = []
    handle = model.swnu.register_forward_hook(lambda module, args, out: seen.append(out.detach().clone()))
    with torch.no_grad():
        logits = model(x, mask, time)
    handle.remove()
    return logits, seen[0]


# --- path_reduction: none is the computation of before ---------------------------------------

@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("concat_time", [True, False])
def test_none_is_bit_identical_to_a_model_built_without_the_option(name, concat_time):
    x, mask, time = windows(D)
    plain = build(name, input_dim=D, concat_time=concat_time)
    # path_dimension and path_seed mean nothing without a reduction
    named = build(name, input_dim=D, concat_time=concat_time, path_reduction="none", path_dimension=3, path_seed=7)
    assert [n for n, _ in plain.named_parameters()] == [n for n, _ in named.named_parameters()]
    for (_, a), (_, b) in zip(plain.named_parameters(), named.named_parameters()):
        assert torch.equal(a, b)
    with torch.no_grad():
        assert torch.equal(plain(x, mask, time), named(x, mask, time))


def test_none_swnu_is_the_forward_of_before():
    """The SWNU forward as it was written before the option, on the same weights."""
    x, mask, time = windows(D)
    model = build("swnu", input_dim=D)
    with torch.no_grad():
        before = model.ffn(torch.cat([model.swnu(x, mask, time), x[:, -1],
                                      model.time_scale * previous_gap(mask, time)], dim=-1))
        assert torch.equal(model(x, mask, time), before)
    assert model.swnu.conv.in_channels == D


# --- path_reduction: umap reads the appended columns -----------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_umap_unit_reads_the_appended_columns_and_the_head_the_post_vector(name):
    x, mask, time = windows(D + R)
    model = build(name, input_dim=D + R, path_reduction="umap", path_dimension=R)
    assert model.swnu.conv.in_channels == R
    head_in = model.ffn[0].in_features
    unit_width = model.swnu.output_dim if name == "swnu" else model.config.lstm_hidden_dim
    assert head_in == unit_width + D + 1  # the post's SBERT vector, not the reduced columns

    logits, unit = unit_outputs(model, x, mask, time)
    no_post = x.clone()
    no_post[..., :D] = 0
    logits_no_post, unit_no_post = unit_outputs(model, no_post, mask, time)
    assert torch.equal(unit_no_post, unit)  # the unit never reads the first D columns
    assert not torch.equal(logits_no_post, logits)  # the head does
    no_path = x.clone()
    no_path[..., D:] = 0
    logits_no_path, unit_no_path = unit_outputs(model, no_path, mask, time)
    assert not torch.equal(unit_no_path, unit)  # the unit reads the last R columns
    # ... and only the current post's vector reaches the head: older posts' SBERT vectors change nothing
    older = x.clone()
    older[:, :-1, :D] = torch.randn_like(older[:, :-1, :D])
    assert torch.equal(unit_outputs(model, older, mask, time)[0], logits)
    # the head reads the current post's full SBERT vector: every column of it counts
    with torch.no_grad():
        weights = model.ffn[0].weight[:, unit_width:unit_width + D]
    assert (weights.abs().sum(0) > 0).all()


def test_umap_head_reads_the_full_current_post_vector():
    """The head's input is [unit output, x[:, -1, :D], time gap], in that order."""
    x, mask, time = windows(D + R)
    model = build("swnu", input_dim=D + R, path_reduction="umap", path_dimension=R)
    captured = []
    handle = model.ffn.register_forward_pre_hook(lambda module, args: captured.append(args[0].clone()))
    logits, unit = unit_outputs(model, x, mask, time)
    handle.remove()
    head_input = captured[0]
    k = model.swnu.output_dim
    assert torch.equal(head_input[:, :k], unit)
    assert torch.equal(head_input[:, k:k + D], x[:, -1, :D])
    assert torch.equal(head_input[:, k + D:], model.time_scale * previous_gap(mask, time))


def test_option_settings_are_checked():
    base = dict(input_dim=D, num_labels=2, conv_dim=2, swnu_hidden_dim=3, ffn_hidden_dims=[4])
    with pytest.raises(ValueError, match="path_reduction must be one of"):
        SWNUConfig(**base, path_reduction="pca")
    with pytest.raises(ValueError, match="reduce-embeddings"):
        SWNUConfig(**base, path_reduction="umap", path_dimension=D)  # no SBERT columns left
    validate_params("swnu_umap", "swnu", {"path_reduction": "umap", "path_dimension": 15, "path_seed": 42})
    validate_params("seqsignet_umap", "seqsignet", {"path_reduction": "none"})
    with pytest.raises(ValueError, match="path_reduction"):
        validate_params("swnu_umap", "swnu", {"path_reduction": "tsne"})
    with pytest.raises(ValueError, match="path_dimension"):
        validate_params("swnu_umap", "swnu", {"path_dimension": 0})
    with pytest.raises(ValueError, match="unknown key 'path_reduction'"):
        validate_params("ffn_history", "ffn_history", {"path_reduction": "umap"})


# --- the reduce-embeddings subcommand -------------------------------------------------------

def _vectors(tmp_path, n=120, width=16):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, width))
    vectors = (centres[rng.integers(0, 4, n)] + 0.3 * rng.normal(size=(n, width))).astype(np.float32)
    path = tmp_path / "sbert.npy"
    np.save(path, vectors)
    return path, vectors


@needs_umap
def test_reduction_appends_the_umap_columns_deterministically(tmp_path):
    path, vectors = _vectors(tmp_path)
    outputs = [tmp_path / "a.npy", tmp_path / "b.npy"]
    for out in outputs:
        assert cli(["reduce-embeddings", "--embeddings", str(path), "--method", "umap", "--dimension", "3",
                    "--seed", "42", "--output", str(out)]) == 0
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    combined = np.load(outputs[0])
    assert combined.shape == (vectors.shape[0], vectors.shape[1] + 3) and combined.dtype == np.float32
    assert np.array_equal(combined[:, :16], vectors)  # the SBERT vectors, as they were
    assert np.isfinite(combined).all() and combined[:, 16:].std(0).min() > 0
    # another seed, another reduction
    assert cli(["reduce-embeddings", "--embeddings", str(path), "--dimension", "3", "--seed", "1",
                "--output", str(tmp_path / "c.npy")]) == 0
    assert not np.array_equal(np.load(tmp_path / "c.npy")[:, 16:], combined[:, 16:])


@pytest.mark.parametrize("content", ["garbled", "1-d", "nan", "ints"])
def test_reduction_refuses_a_bad_input_naming_the_file(tmp_path, capsys, content):
    path = tmp_path / "sbert.npy"
    if content == "garbled":
        path.write_bytes(b"\x93NUMPY not really an array")
    else:
        array = {"1-d": np.zeros(50, np.float32), "ints": np.ones((50, 8), np.int64),
                 "nan": np.full((50, 8), np.nan, np.float32)}[content]
        np.save(path, array)
    out = tmp_path / "out.npy"
    assert cli(["reduce-embeddings", "--embeddings", str(path), "--dimension", "3", "--output", str(out)]) == 1
    error = capsys.readouterr().err
    assert str(path) in error and "reduce-embeddings: error" in error
    assert not out.exists()


def test_reduction_without_umap_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "umap", None)  # `import umap` raises ImportError
    path, _ = _vectors(tmp_path)
    assert cli(["reduce-embeddings", "--embeddings", str(path), "--dimension", "3",
                "--output", str(tmp_path / "out.npy")]) == 1
    assert "pip install -e .[umap]" in capsys.readouterr().err


# --- the workflow and the fingerprint chain --------------------------------------------------

def _config():
    from snakemake.utils import validate

    settings = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    swnu = {"windows": [3], "params": {"epochs": 2, "batch_size": 16, "patience": 1,
                                       "grid": {"lr": [1.0e-3], "ffn_hidden_dims": [[8]], "swnu_hidden_dim": [3],
                                                "conv_dim": [2]}}}
    settings["models"]["swnu"] = swnu
    umap_entry = copy.deepcopy(swnu)
    umap_entry["type"] = "swnu"
    umap_entry["params"].update(path_reduction="umap", path_dimension=4, path_seed=7)
    settings["models"]["swnu_umap"] = umap_entry
    settings["datasets"]["lrs_synthetic"]["models"] += ["swnu", "swnu_umap"]
    validate(settings, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    return settings


def test_fingerprint_chain_of_the_option(tmp_path):
    settings = _config()
    package = REPO / "src" / "tempoformer"
    chain = RunFingerprints(settings, package)
    assert chain.path_reduction("swnu") is None
    assert chain.path_reduction("swnu_umap") == {"method": "umap", "dimension": 4, "seed": 7}
    # the model's defaults are the chain's (a file named by seed 42 and 15 dimensions)
    defaults = {f.name: f.default for f in dataclasses.fields(SWNUConfig)}
    bare = copy.deepcopy(settings)
    bare["models"]["swnu_umap"]["params"] = {"path_reduction": "umap", "grid": {}}
    assert RunFingerprints(bare, package).path_reduction("swnu_umap") == {
        "method": "umap", "dimension": defaults["path_dimension"], "seed": defaults["path_seed"]}
    # runs without the option: the same fingerprint whether or not a umap entry exists beside them
    without = copy.deepcopy(settings)
    del without["models"]["swnu_umap"]
    without["datasets"]["lrs_synthetic"]["models"].remove("swnu_umap")
    plain = RunFingerprints(without, package).all_runs()
    both = chain.all_runs()
    assert all(both[run] == fp for run, fp in plain.items())
    # the reduction's settings are in the umap runs' chain
    run = ("lrs_synthetic", "swnu_umap", 3, 0, 0)
    other = copy.deepcopy(settings)
    other["models"]["swnu_umap"]["params"]["path_seed"] = 8
    assert RunFingerprints(other, package).run(*run) != chain.run(*run)
    # a grid point cannot pick its own embeddings file
    gridded = copy.deepcopy(settings)
    gridded["models"]["swnu_umap"]["params"]["grid"]["path_seed"] = [1, 2]
    with pytest.raises(ValueError, match="not in the grid"):
        RunFingerprints(gridded, package).run(*run)


@pytest.mark.slow
def test_workflow_gives_umap_entries_the_reduced_file(tmp_path):
    """A dry run: the umap entry's training reads sbert_umap4_seed7.npy, made by reduce_embeddings
    from sbert.npy; the plain entry reads sbert.npy."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(_config()))
    result = snakemake(tmp_path, path, "-n", "-p")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    train = [line for line in lines if " tempoformer train " in line]
    umap_runs = [line for line in train if "--model swnu_umap " in line]
    plain_runs = [line for line in train if "--model swnu " in line]
    assert umap_runs and plain_runs
    assert all("--embeddings results/lrs_synthetic/sbert_umap4_seed7.npy" in line for line in umap_runs)
    assert all("--embeddings results/lrs_synthetic/sbert.npy" in line for line in plain_runs)
    reduce = [line for line in lines if " tempoformer reduce-embeddings " in line]
    assert len(reduce) == 1
    assert ("--embeddings results/lrs_synthetic/sbert.npy --method umap --dimension 4 --seed 7"
            " --output results/lrs_synthetic/sbert_umap4_seed7.npy") in reduce[0]

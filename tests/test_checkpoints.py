"""Checkpoints and saved models without pickle (issue 67): safetensors + JSON that round-trip
every state exactly, a damaged checkpoint set aside with the run resumed from the one before it
(or from the start) to the numbers of an uninterrupted run, a full disk named with the file and
no partial file left, and the authors' DCWE pickles read only behind allow_pickle."""

import errno
import json
import logging
import math
import pickle
import random
import struct

import numpy as np
import pytest
import torch
from test_train import dies_in_epoch_three, toy_run, train  # noqa: F401  (toy_run: a fixture)

from tempoformer.atomic import DiskFull, atomic_dir, write_text_atomic
from tempoformer.checkpoint_io import DamagedState, load_state, save_state, set_aside
from tempoformer.errors import InputError

PARAMS = {"epochs": 6, "batch_size": 16, "patience": 10, "grid": {"lr": [1e-3], "hidden_dims": [[16, 16]]}}


def safetensors_layout(path):
    """(header, data length) of a safetensors file whose every byte is its header or tensor data."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    ends = [info["data_offsets"][1] for name, info in header.items() if name != "__metadata__"]
    assert 8 + size + max(ends, default=0) == len(raw), "bytes that are neither header nor tensors"
    return header, len(raw) - 8 - size


def no_unpickling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unpickled")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)


# --------------------------------------------------------------------------- the format


def test_every_state_round_trips_exactly_without_pickle(tmp_path, monkeypatch):
    torch.manual_seed(3)
    net = torch.nn.ModuleDict({"emb": torch.nn.Embedding(7, 4), "head": torch.nn.Linear(4, 7, bias=False),
                               "ffn": torch.nn.Linear(4, 4)})
    net["head"].weight = net["emb"].weight  # tied weights: stored once
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / 10)
    net["head"](net["ffn"](net["emb"](torch.tensor([1, 2, 3])))).sum().backward()
    optimizer.step()
    scheduler.step()
    rng = np.random.default_rng(11)
    rng.random(5)
    random.seed(5)
    random.random()
    state = {"model": net.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "numpy_rng": rng.bit_generator.state, "python_rng": random.getstate(),
             "torch_rng": torch.get_rng_state(), "floats": [0.1, 1 / 3, -0.0, 1e-310, math.inf, 2.0**70],
             "big": 2**127 + 1, "pair": (1, "a"), "ints": {3: "x", (1, 2): [None, True]},
             "array": np.arange(6, dtype=np.int16).reshape(2, 3), "scalar": np.float64(0.25),
             "empty": torch.zeros(0, 3), "zero_dim": torch.tensor(2.5, dtype=torch.bfloat16),
             "view": torch.arange(10.0)[2:5], "tag_like": {"__tensor__": "not a tensor"}}
    path = tmp_path / "state.safetensors"
    save_state(path, state)
    header, _ = safetensors_layout(path)
    assert header["__metadata__"]["format"] == "tempoformer-state"
    assert "model/emb.weight" in header and "model/head.weight" not in header  # the tied weight once

    no_unpickling(monkeypatch)
    back = load_state(path)
    assert set(back) == set(state)
    assert all(torch.equal(back["model"][k], v) for k, v in state["model"].items())
    assert list(back["optimizer"]["state"]) == [0, 1, 2]  # integer keys, as load_state_dict needs
    for i, values in state["optimizer"]["state"].items():
        assert all(torch.equal(back["optimizer"]["state"][i][k], v) for k, v in values.items())
    assert back["optimizer"]["param_groups"] == state["optimizer"]["param_groups"]
    assert back["scheduler"] == state["scheduler"]
    assert back["numpy_rng"] == state["numpy_rng"] and back["python_rng"] == state["python_rng"]
    assert torch.equal(back["torch_rng"], state["torch_rng"]) and back["torch_rng"].dtype == torch.uint8
    assert back["floats"] == state["floats"] and str(back["floats"][2]) == "-0.0"
    assert back["big"] == 2**127 + 1 and back["pair"] == (1, "a") and back["ints"] == {3: "x", (1, 2): [None, True]}
    assert back["array"].dtype == np.int16 and (back["array"] == state["array"]).all()
    assert back["scalar"] == 0.25 and back["empty"].shape == (0, 3)
    assert back["zero_dim"].dtype == torch.bfloat16 and torch.equal(back["zero_dim"], state["zero_dim"])
    assert torch.equal(back["view"], torch.tensor([2.0, 3.0, 4.0])) and back["tag_like"] == state["tag_like"]

    # the generators restored from the file draw what the originals draw
    again = np.random.default_rng(0)
    again.bit_generator.state = back["numpy_rng"]
    assert (again.random(4) == rng.random(4)).all()
    random.setstate(back["python_rng"])
    expected = random.random()
    random.setstate(state["python_rng"])
    assert random.random() == expected
    torch.set_rng_state(back["torch_rng"])
    drawn = torch.rand(3)
    torch.set_rng_state(state["torch_rng"])
    assert torch.equal(torch.rand(3), drawn)


def test_a_value_that_json_cannot_hold_is_refused_when_saving(tmp_path):
    with pytest.raises(TypeError, match="info/when: a set cannot be saved"):
        save_state(tmp_path / "x", {"info": {"when": {1, 2}}})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["truncated", "overwritten tensor bytes", "overwritten json", "empty", "garbage"])
def test_damaged_files_are_named_and_never_read_as_numbers(tmp_path, damage):
    path = tmp_path / "state.pt"
    save_state(path, {"w": torch.arange(1000, dtype=torch.float32), "epoch": 12345})
    raw = bytearray(path.read_bytes())
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "overwritten tensor bytes":
        raw[-100:-90] = bytes(b ^ 0xFF for b in raw[-100:-90])
    elif damage == "overwritten json":
        at = raw.index(b"12345")
        raw[at : at + 5] = b"12346"
    elif damage == "empty":
        raw = b""
    else:
        raw = b"\x00\x01 not a checkpoint" * 10
    path.write_bytes(bytes(raw))
    with pytest.raises(DamagedState, match=f"{path.name}: ") as error:
        load_state(path)
    assert error.value.path == str(path)


def test_set_aside_renames_with_a_warning(tmp_path, caplog):
    path = tmp_path / "c.pt"
    path.write_bytes(b"x")
    with caplog.at_level(logging.WARNING):
        aside = set_aside(path, "truncated")
    assert aside == tmp_path / "c.pt.damaged" and aside.read_bytes() == b"x" and not path.exists()
    assert str(path) in caplog.text and "truncated" in caplog.text and "c.pt.damaged" in caplog.text


def test_files_of_torch_save_days_still_load_with_the_restricted_unpickler(tmp_path, monkeypatch):
    path = tmp_path / "old.pt"
    torch.save({"state": {"w": torch.ones(2)}, "info": {"seed": 1}, "rng": {"state": 2**100}}, path)
    calls = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    back = load_state(path)
    assert torch.equal(back["state"]["w"], torch.ones(2)) and back["rng"] == {"state": 2**100}
    assert calls == [{"map_location": "cpu", "weights_only": True}]

    class Evil:
        def __reduce__(self):
            return (print, ("ran code from the file",))

    torch.save({"x": Evil()}, path)
    with pytest.raises(DamagedState, match="cannot be read safely"):
        load_state(path)


# --------------------------------------------------------------------------- saved models


def test_future_lm_saved_models_round_trip_without_pickle(tmp_path, monkeypatch):
    from test_future_lm_models import features, lm, temporal

    from tempoformer.future_lm.checkpoint import load_model, load_pretrained_lm, save_model, save_pretrained

    base = lm(seed=4)
    save_pretrained(base, tmp_path / "pretrained.pt", {"seed": 4, "vocab_size": 40, "log": [(1, 2.5)]})
    model = temporal({"type": "context2"}, 0.3, base=lm(seed=5))
    save_model(model, tmp_path / "model.pt", {"seed": 5, "best_dev_ppl": 12.5})
    for name in ("pretrained.pt", "model.pt"):
        safetensors_layout(tmp_path / name)
    no_unpickling(monkeypatch)
    again, info = load_pretrained_lm(tmp_path / "pretrained.pt")
    assert info == {"seed": 4, "vocab_size": 40, "log": [(1, 2.5)]}
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in base.state_dict().items())
    loaded, info = load_model(tmp_path / "model.pt", features())
    assert info == {"seed": 5, "best_dev_ppl": 12.5}
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in model.state_dict().items())


def test_dcwe_and_semantic_change_models_round_trip_and_old_files_still_load(tmp_path, monkeypatch):
    from dataclasses import asdict

    from test_dcwe import make_model
    from test_semantic_change import tiny_bert

    from tempoformer.dcwe import model as dcwe
    from tempoformer.semantic_change import model as semantic_change
    from tempoformer.semantic_change.model import load_tokenizer

    tokenizer = load_tokenizer("minilm")
    model = make_model(tokenizer, mode="full")  # with its social graph
    dcwe.save_model(model, tmp_path / "dcwe.pt", {"seed": 1})
    spec = semantic_change.TemporalSpec(periods=["a", "b"], time="attention", prepend=False)
    bert_model, tok, _ = semantic_change.build_model("minilm", spec, bert=tiny_bert(), tokenizer=tokenizer)
    semantic_change.save_model(bert_model, tmp_path / "sc.pt", {"note": (1, 2)})
    # the same models as the torch.save of before wrote them
    keep = model.edge_index[0] != model.edge_index[1]
    torch.save({"spec": asdict(model.spec), "bert_config": model.config.to_dict(),
                "dynamic_ids": model.dynamic.nonzero().flatten().tolist(),
                "state_dict": {k: v for k, v in model.state_dict().items() if k not in ("social_input", "edge_index")},
                "info": {"seed": 1}, "social": model.social_input, "edge_index": model.edge_index[:, keep]},
               tmp_path / "dcwe_old.pt")
    torch.save({"spec": asdict(bert_model.spec), "bert_config": bert_model.config.to_dict(),
                "state_dict": bert_model.state_dict(), "info": {"note": (1, 2)}}, tmp_path / "sc_old.pt")

    for name in ("dcwe.pt", "sc.pt"):
        safetensors_layout(tmp_path / name)
    with monkeypatch.context() as patch:
        no_unpickling(patch)
        new_dcwe, dcwe_info = dcwe.load_model(tmp_path / "dcwe.pt")
        new_sc, _, _, sc_info = semantic_change.load_model(tmp_path / "sc.pt", tokenizer=tokenizer)
    old_dcwe, old_dcwe_info = dcwe.load_model(tmp_path / "dcwe_old.pt")
    old_sc, _, _, old_sc_info = semantic_change.load_model(tmp_path / "sc_old.pt", tokenizer=tokenizer)
    assert dcwe_info == old_dcwe_info == {"seed": 1} and sc_info == old_sc_info == {"note": (1, 2)}
    for original, loaded in ((model, new_dcwe), (model, old_dcwe), (bert_model, new_sc), (bert_model, old_sc)):
        expected = original.state_dict()
        assert set(loaded.state_dict()) == set(expected)
        assert all(torch.equal(v, expected[k]) for k, v in loaded.state_dict().items())


# --------------------------------------------------------------------------- training checkpoints


def killed_run(root, monkeypatch, out="killed"):
    """A run killed in epoch three: its checkpoint after epoch two (and the one before, .prev)."""
    import tempoformer.training.loop as training

    real_predict = training.predict_proba
    monkeypatch.setattr(training, "predict_proba", dies_in_epoch_three(real_predict))
    with pytest.raises(KeyboardInterrupt):
        train(root, "ffn_history", 3, PARAMS, out=out)
    monkeypatch.setattr(training, "predict_proba", real_predict)
    folder = root / f"{out}_ffn_history_3" / "checkpoints"
    (checkpoint,) = folder.glob("*.pt")
    return checkpoint, checkpoint.with_name(checkpoint.name + ".prev")


@pytest.fixture
def uninterrupted(toy_run):  # noqa: F811
    result = train(toy_run, "ffn_history", 3, PARAMS, out="whole")
    return {"grid": result["grid"], "test": result["test"]}


def same_numbers(result, uninterrupted):
    assert [e["epoch"] for e in result["grid"][0]["epochs"]] == list(range(6))
    assert {"grid": result["grid"], "test": result["test"]} == uninterrupted


def test_a_checkpoint_holds_no_pickle_and_a_resume_unpickles_nothing(toy_run, uninterrupted, monkeypatch):  # noqa: F811
    checkpoint, previous = killed_run(toy_run, monkeypatch)
    for path in (checkpoint, previous):
        header, _ = safetensors_layout(path)
        assert not path.read_bytes().startswith(b"PK")  # not torch.save's zip of pickles
        state = json.loads(header["__metadata__"]["json"])
        assert set(state) >= {"model", "optimizer", "numpy_rng", "python_rng", "torch_rng", "history"}
    assert json.loads(safetensors_layout(checkpoint)[0]["__metadata__"]["json"])["epoch"] == 1
    assert json.loads(safetensors_layout(previous)[0]["__metadata__"]["json"])["epoch"] == 0
    no_unpickling(monkeypatch)
    same_numbers(train(toy_run, "ffn_history", 3, PARAMS, out="killed"), uninterrupted)


def truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_truncated_checkpoint_is_set_aside_and_the_run_resumes_from_the_previous(
        toy_run, uninterrupted, monkeypatch, caplog):  # noqa: F811
    import tempoformer.training.loop as training

    checkpoint, previous = killed_run(toy_run, monkeypatch)
    truncate(checkpoint)
    applied = []
    real_apply = training._apply
    monkeypatch.setattr(training, "_apply", lambda payload, *a: applied.append(payload["epoch"]) or real_apply(payload, *a))
    with caplog.at_level(logging.WARNING):
        resumed = train(toy_run, "ffn_history", 3, PARAMS, out="killed")
    assert applied == [0]  # resumed after epoch 0, from the previous checkpoint
    assert f"{checkpoint}: not a readable safetensors file" in caplog.text and f"{checkpoint.name}.damaged" in caplog.text
    same_numbers(resumed, uninterrupted)


def test_with_both_checkpoints_damaged_the_run_starts_again(toy_run, uninterrupted, monkeypatch, caplog):  # noqa: F811
    import tempoformer.training.loop as training

    checkpoint, previous = killed_run(toy_run, monkeypatch)
    truncate(checkpoint)
    raw = bytearray(previous.read_bytes())
    raw[-64:-32] = bytes(b ^ 0xFF for b in raw[-64:-32])  # overwritten tensor bytes: only the sha256 sees them
    previous.write_bytes(bytes(raw))
    aside = []
    real_set_aside = training.set_aside
    monkeypatch.setattr(training, "set_aside", lambda path, problem: aside.append(
        (path.name, problem)) or real_set_aside(path, problem))
    monkeypatch.setattr(training, "_apply", lambda *a: pytest.fail("resumed from a damaged checkpoint"))
    with caplog.at_level(logging.WARNING):
        resumed = train(toy_run, "ffn_history", 3, PARAMS, out="killed")
    assert [name for name, _ in aside] == [checkpoint.name, previous.name]
    assert "differs from the sha256" in aside[1][1]
    same_numbers(resumed, uninterrupted)


def test_a_checkpoint_of_torch_save_days_resumes_to_the_same_numbers(toy_run, uninterrupted, monkeypatch):  # noqa: F811
    """A run interrupted under the old code (torch.save checkpoints) finishes under the new one."""
    import tempoformer.training.loop as training

    def old_save(path, payload):
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({k: v for k, v in payload.items() if k not in ("python_rng", "best_is_model")}
                   | {"best": payload["best"] if not payload["best_is_model"]
                      else {**payload["best"], "state": payload["model"]}}, path)

    monkeypatch.setattr(training, "save_state", old_save)
    checkpoint, _ = killed_run(toy_run, monkeypatch)
    assert checkpoint.read_bytes().startswith(b"PK")
    monkeypatch.undo()
    same_numbers(train(toy_run, "ffn_history", 3, PARAMS, out="killed"), uninterrupted)


def test_a_full_disk_while_checkpointing_is_named_and_the_rerun_resumes(toy_run, uninterrupted, monkeypatch):  # noqa: F811
    import safetensors.torch

    real_save_file = safetensors.torch.save_file
    calls = {"n": 0}

    def fills_the_disk(tensors, filename, metadata=None):
        calls["n"] += 1
        if calls["n"] == 3:
            with open(filename, "wb") as handle:
                handle.write(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save_file(tensors, filename, metadata=metadata)

    monkeypatch.setattr(safetensors.torch, "save_file", fills_the_disk)
    with pytest.raises(DiskFull, match="no space left on device while writing .*checkpoints/.*\\.pt") as error:
        train(toy_run, "ffn_history", 3, PARAMS, out="full")
    assert error.value.errno == errno.ENOSPC
    folder = toy_run / "full_ffn_history_3" / "checkpoints"
    assert [p.suffix for p in folder.iterdir()] == [".prev"]  # the last good one; no partial file
    monkeypatch.undo()
    same_numbers(train(toy_run, "ffn_history", 3, PARAMS, out="full"), uninterrupted)


# --------------------------------------------------------------------------- a full disk


def test_a_full_disk_names_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    from pathlib import Path

    real_write_text = Path.write_text

    def full(self, text, *args, **kwargs):
        real_write_text(self, text[:3])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError, match=f"no space left on device while writing {tmp_path / 'table.md'}") as error:
        write_text_atomic(tmp_path / "table.md", "| a |\n")
    assert isinstance(error.value, DiskFull) and error.value.filename == str(tmp_path / "table.md")
    with pytest.raises(DiskFull, match=f"no space left on device while writing {tmp_path / 'model'} .*partial folder"):
        with atomic_dir(tmp_path / "model") as folder:
            (folder / "weights").write_text("w")
    quota = OSError(errno.EDQUOT, "Disk quota exceeded")
    monkeypatch.setattr(Path, "write_text", lambda *a, **k: (_ for _ in ()).throw(quota))
    with pytest.raises(DiskFull, match="disk quota exceeded while writing"):
        write_text_atomic(tmp_path / "x.json", "{}")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    with pytest.raises(PermissionError):  # other errors pass unchanged
        with atomic_dir(tmp_path / "other"):
            raise PermissionError("no")


# --------------------------------------------------------------------------- the authors' DCWE pickles


def authors_release(root):
    from test_dcwe_data import write_csv

    header = ["user", "time", "year", "month", "day", "text", "label"]
    for split, rows in {"train": [("u1", "t", 2010, 3, 1, "good food", 1), ("u2", "t", 2011, 5, 2, "bad", 0)],
                        "dev": [("u1", "t", 2011, 1, 1, "fine", 1)], "test": [("u2", "t", 2010, 1, 1, "meh", 0)]}.items():
        write_csv(root / f"yelp_{split}.csv", header, rows)
    (root / "yelp_users.p").write_bytes(pickle.dumps(["u1", "u2"]))
    (root / "yelp_edges.p").write_bytes(pickle.dumps({("u1", "u2")}))


def test_the_authors_pickles_are_read_only_with_allow_pickle(tmp_path, monkeypatch):
    from tempoformer.dcwe.data import load_corpus, read_release

    authors_release(tmp_path)
    real_load = pickle.load
    no_unpickling(monkeypatch)
    with pytest.raises(InputError, match="yelp_users.p: .*a Python pickle, which can run any code.*allow_pickle: true"):
        read_release(tmp_path, "yelp")
    with pytest.raises(InputError, match="yelp_users.p: .*dcwe.datasets.<name>.allow_pickle"):
        load_corpus({"format": "release", "path": str(tmp_path)}, "yelp")
    with pytest.raises(InputError, match="allow_pickle"):  # only true itself opens them
        load_corpus({"format": "release", "path": str(tmp_path), "allow_pickle": "yes"}, "yelp")
    monkeypatch.setattr(pickle, "load", real_load)
    corpus = load_corpus({"format": "release", "path": str(tmp_path), "allow_pickle": True}, "yelp")
    assert corpus.units == ["u1", "u2"] and corpus.edges == [(0, 1)]

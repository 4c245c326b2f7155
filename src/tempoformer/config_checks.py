"""Start-up checks of a config's values that Snakemake's schema cannot see: the workflow
(workflow/rules/common.smk) calls them while it parses its rules, so `snakemake -n` stops on a
misspelt or out-of-range setting instead of a job failing on it hours later.

- `check_reader_options`: each dataset's reader `options` against the reader's signature
  (data.ingest.check_options, the check ingest itself makes).
- `check_stage_settings`: the settings sections of the semantic change, DCWE and future-LM stages
  (their global sections and each dataset's overrides) against the settings classes their jobs
  build: unknown keys and values out of their field's range (tempoformer/settings.py).
The model `params` are the model registry's (models/registry.py validate_params).
- `check_dataset_overrides`: a stage dataset's overrides of the stage's sections against the
  schema of those sections (the schema itself checks only the stage's own).
- `check_causes`: the `causes:` section (issue 68's cause-by-cause table) names model entries
  that exist: its reference, baselines and factors are keys of `models` (a JSON schema cannot
  compare one section's keys with another's).
- `check_encoder_backbones`: every place that names an encoder (a model's `backbone`, the SBERT
  `embedding_model`, the DCWE and semantic change backbones) names none of the registered causal
  LMs (smollm2-135m), which are for the future-LM stage and the LLM rows only.
- `check_yaml_file`: a YAML syntax error named with its file and line. Snakemake 9 reads the
  files of `--configfile` itself, before the Snakefile runs, and says only "Config file is not
  valid JSON or YAML" (`--verbose` adds the parser's message with the file and the line); the
  Snakefile runs this on the default config before it loads it.

Each raises ValueError naming the config key; the stage classes are imported only when the
config has that stage.
"""

from __future__ import annotations

from .settings import check_ranges, check_settings


def check_yaml_file(path) -> None:
    """ValueError "<path>, line L, column C: <problem>" for a YAML syntax error in `path`."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        try:
            yaml.safe_load(handle)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
            problem = " ".join(p for p in (getattr(error, "problem", None), getattr(error, "context", None)) if p)
            raise ValueError(f"{where}: not valid YAML: {problem or error}") from None


def check_causes(config: dict) -> None:
    """ValueError "causes.<key>: ..." for a reference, baseline or factor of the `causes:` section
    that is not an entry under `models` (a factor may instead be a name of `chosen_on_dev`, whose
    members must be entries and which must itself be a factor and no entry), or a factor that is
    the reference or a baseline."""
    causes = config.get("causes")
    if not causes:
        return
    models = config.get("models") or {}
    known = f"the entries under models are {', '.join(sorted(models)) or 'none'}"
    choices = causes.get("chosen_on_dev") or {}
    for name, members in choices.items():
        if name in models:
            raise ValueError(f"causes.chosen_on_dev.{name}: is also an entry under models; a choice made on dev "
                             "needs a name of its own")
        if name not in (causes.get("factors") or {}):
            raise ValueError(f"causes.chosen_on_dev.{name}: is not a factor; add it under causes.factors with "
                             "what it changes")
    named = [("causes.reference", causes.get("reference"))]
    named += [(f"causes.baselines[{i}]", m) for i, m in enumerate(causes.get("baselines") or [])]
    named += [(f"causes.factors.{m}", m) for m in (causes.get("factors") or {}) if m not in choices]
    named += [(f"causes.chosen_on_dev.{name}[{i}]", m) for name, members in choices.items()
              for i, m in enumerate(members)]
    for where, model in named:
        if model not in models:
            raise ValueError(f"{where}: names {model!r}, which has no entry under models ({known})")
    for model in causes.get("factors") or {}:
        if model == causes.get("reference") or model in (causes.get("baselines") or []):
            raise ValueError(f"causes.factors.{model}: is also the reference or a baseline; a factor is an "
                             "entry that changes one thing from the reference")


def check_reader_options(datasets: dict) -> None:
    """ValueError "datasets.<name>.options: <problem>" for a reader option the dataset's format
    does not take or a value of the wrong type."""
    if not datasets:
        return
    from .data.ingest import READERS, check_options

    for name, spec in datasets.items():
        if spec.get("format") not in READERS:
            continue  # the schema's enum names it
        try:
            check_options(spec["format"], spec.get("options") or {})
        except ValueError as error:
            raise ValueError(f"datasets.{name}.options: {error}") from None


def check_dataset_overrides(config: dict, schema_path) -> None:
    """A stage dataset's override of a stage section (future_lm.datasets.X.lm, dcwe.datasets.X.model,
    semantic_change.datasets.X.attention, ...) held to the schema of the section it overrides:
    the schema sees only the stage's own sections. ValueError "<stage>.datasets.<name>.<key>...:
    <problem>" (the section as the job reads it: the stage's, updated by the dataset's)."""
    import copy

    import jsonschema
    import yaml

    with open(schema_path, encoding="utf-8") as handle:
        schema = yaml.safe_load(handle)
    validator = jsonschema.validators.validator_for(schema)(schema)
    for stage in ("semantic_change", "dcwe", "future_lm"):
        if not isinstance(config.get(stage), dict):
            continue
        stage_schema = schema["properties"][stage]
        own = set(stage_schema["properties"]["datasets"]["additionalProperties"].get("properties", {}))
        for name, dataset in (config[stage].get("datasets") or {}).items():
            for key in dataset if isinstance(dataset, dict) else ():
                if key in own or key in ("datasets", "models") or key not in stage_schema["properties"]:
                    continue
                value, base = dataset[key], config[stage].get(key)
                merged = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
                instance = copy.deepcopy(config)
                instance[stage][key] = merged
                for error in validator.iter_errors(instance):
                    path = list(error.absolute_path)
                    if path[:2] == [stage, key]:
                        inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[2:])
                        raise ValueError(f"{stage}.datasets.{name}.{key}{inner}: {error.message}")


def _places(section: dict, key: str):
    """(where, values) of a settings section: the stage's own, then each dataset's override."""
    if isinstance(section.get(key), dict):
        yield key, section[key]
    for name, dataset in (section.get("datasets") or {}).items():
        if isinstance(dataset, dict) and isinstance(dataset.get(key), dict):
            yield f"datasets.{name}.{key}", dataset[key]


def check_stage_settings(config: dict) -> None:
    """ValueError "<stage>.<section>.<key>: ..." for an unknown key or a value out of range in
    a stage's settings sections."""
    if config.get("semantic_change"):
        from .semantic_change.pretrain import MLMPretrainSettings
        from .semantic_change.scoring import ScoreSettings

        from .semantic_change.model import TemporalSpec

        sc = config["semantic_change"]
        for key, cls in (("training", MLMPretrainSettings), ("scoring", ScoreSettings)):
            for where, values in _places(sc, key):
                check_settings(cls, values, f"semantic_change.{where}")
        for where, values in _places(sc, "attention"):  # TemporalSpec's time_norm, form, time_init_std
            unknown = set(values) - {"time_norm", "form", "time_init_std"}
            if unknown:
                raise ValueError(f"semantic_change.{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}; "
                                 "known: time_norm, form, time_init_std")
            check_ranges(TemporalSpec, values, f"semantic_change.{where}")
    if config.get("dcwe"):
        from .dcwe.graph import Node2VecSettings
        from .dcwe.model import DcweSpec
        from .dcwe.options import DCWETrainSettings
        from .dcwe.sentiment import ClassifierSettings

        dc = config["dcwe"]
        for key in ("warmup", "training"):
            for where, values in _places(dc, key):
                check_settings(DCWETrainSettings, values, f"dcwe.{where}")
        for where, values in _places(dc, "node2vec"):
            check_settings(Node2VecSettings, values, f"dcwe.{where}")
        for where, values in _places(dc, "sentiment"):  # the classifier's keys and the training's
            classifier = {k: v for k, v in values.items() if k in ClassifierSettings.__dataclass_fields__}
            check_settings(ClassifierSettings, classifier, f"dcwe.{where}")
            check_settings(DCWETrainSettings, {k: v for k, v in values.items() if k not in classifier},
                           f"dcwe.{where}")
        for where, values in _places(dc, "model"):  # DcweSpec's fields and vocab.py's top_words, min_id
            check_ranges(DcweSpec, values, f"dcwe.{where}")
    if config.get("future_lm"):
        from .future_lm.data import FilterSettings
        from .future_lm.generate import DecodeSettings
        from .future_lm.lm import LMConfig
        from .future_lm.train import FitSettings

        fl = config["future_lm"]
        for key, cls in (("pretrain", FitSettings), ("finetune", FitSettings), ("generation", DecodeSettings),
                         ("filter", FilterSettings)):
            for where, values in _places(fl, key):
                check_settings(cls, values, f"future_lm.{where}")
        for where, values in _places(fl, "lm"):
            check_settings(LMConfig, {k: v for k, v in values.items() if k != "vocab_size"}, f"future_lm.{where}")


CAUSAL_FAMILIES = ("llama", "gpt2")  # decoder-only: no bidirectional encoder, no pooling


def check_encoder_backbones(config: dict) -> None:
    """ValueError "<key>: <name> is a causal language model ..." where an encoder is expected."""
    from .backbones import BACKBONES

    places = [("embedding_model", config.get("embedding_model"))]
    places += [(f"models.{name}.params.backbone", (entry.get("params") or {}).get("backbone"))
               for name, entry in (config.get("models") or {}).items() if isinstance(entry, dict)]
    places += [(f"{stage}.backbone", (config.get(stage) or {}).get("backbone")) for stage in ("dcwe", "semantic_change")]
    for key, name in places:
        spec = BACKBONES.get(name) if isinstance(name, str) else None
        if spec is not None and spec.family in CAUSAL_FAMILIES:
            encoders = ", ".join(n for n, b in BACKBONES.items() if b.family not in CAUSAL_FAMILIES)
            raise ValueError(f"{key}: {name} is a causal language model ({spec.family}), not an encoder; "
                             f"it serves the future-LM stage (base_model, tokenizer, context.encoder) and the "
                             f"LLM rows. Encoders: {encoders}, or a model folder / hub id")

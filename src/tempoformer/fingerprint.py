"""Content fingerprints that decide when a job reruns: the code a job runs, derived from the
package's import graph, and the settings and data it reads.

The workflow (workflow/rules/common.smk) reads this module while it builds the DAG, and so does
scripts/migrate_fingerprints.py; no job imports it. `RunFingerprints` chains the digests of a
config's training runs along the DAG (raw corpus, ingest, folds, windows, embeddings, train).

Code: each subcommand `x-y` is implemented by a function `cmd_x_y` in its stage's `cli.py`. A
rule's code is that function plus the transitive closure of the package modules it imports (an
import anywhere in a module counts, the lazy ones inside functions too, and importing
`a.b.c` runs the `__init__` of `a` and `a.b`). Model types add the modules the registry names
for them. The digest of that closure is taken over what each module *means*: its syntax tree
without docstrings (comments and layout are not in the tree), with the module paths of the
package's own imports (and module names in strings, as the registry has them) blanked out,
plus the graph's edges between modules. So:
- a changed expression, statement, name or default anywhere in a module a job runs (a lazily
  imported helper too) changes the digest and reruns the job and what follows from it;
- comments, docstrings, blank lines, line breaks and indentation style change no digest and
  rerun nothing;
- moving or renaming a module, and fixing the imports that name it, changes no digest and
  reruns nothing;
- a module the job never imports (another model's, another stage's) is not part of it;
- the model registry's table (`MODEL_TYPES`, ENTRY_TABLES below) is not part of its module's
  digest: a training job takes its own entry instead (`registry_entry`), so adding a model type
  or editing another type's entry reruns nothing else; likewise the backbone table (`BACKBONES`):
  a training or embedding job takes the entry of the backbone it names (`backbone_entry`).

Data files inside the package (the paper's numbers) count as read by a module that names the
file, or its folder, in a string (`Path(__file__).with_name("paper")`). What a digest does not
cover: installed libraries (torch, transformers: the pinned environment and Snakemake's
software-env trigger cover those).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .backbones import backbone_entry

PACKAGE = "tempoformer"
# A table of entries in a module, each entry part of the digest of the jobs that use it rather
# than of every job that imports the module: adding a model type reruns no other model's runs.
ENTRY_TABLES = {"tempoformer.models.registry": "MODEL_TYPES", "tempoformer.backbones": "BACKBONES"}


@dataclass(frozen=True)
class Node:
    digest: str  # sha256 of the normalised source
    imports: frozenset[str]  # package modules it imports


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class ModuleGraph:
    """Every module of the package under `package_dir`, parsed once."""

    def __init__(self, package_dir: str | os.PathLike):
        self.root = Path(package_dir).resolve()
        self.sources: dict[str, tuple[str, bool]] = {}  # module -> (source, is_package)
        for path in sorted(self.root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            self.sources[_module_name(path, self.root)] = (path.read_text(), path.name == "__init__.py")
        # Data files inside the package (the paper's numbers): a node each, named by path. A
        # module that names one, or its folder, in a string reads it.
        self.data_files: dict[Path, list[str]] = {}  # file or folder -> data nodes under it
        self.nodes: dict[str, Node] = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
                key = "data:" + path.relative_to(self.root).as_posix()
                self.nodes[key] = Node(hashlib.sha256(path.read_bytes()).hexdigest(), frozenset())
                for holder in (path, *path.parents):
                    if holder == self.root:
                        break
                    self.data_files.setdefault(holder, []).append(key)
        self.nodes.update({name: self._node(name, *self.sources[name]) for name in self.sources})
        self._subcommands: dict[str, Node] = {}

    def _package_module(self, dotted: str) -> str | None:
        """The package module `dotted` names, or for `pkg.mod.attr` the module `pkg.mod`."""
        while dotted and dotted.split(".")[0] == PACKAGE:
            if dotted in self.sources:
                return dotted
            dotted = dotted.rpartition(".")[0]
        return None

    def _imported(self, node: ast.ImportFrom, module: str, is_package: bool) -> list[str]:
        """The package modules a `from ... import ...` in `module` imports (none: not the package's)."""
        target = _resolve(node, module, is_package)
        # `from . import x` imports the submodule x
        found = [f"{target}.{a.name}" for a in node.names
                 if self._package_module(f"{target}.{a.name}") == f"{target}.{a.name}"]
        base = self._package_module(target)
        return found or ([base] if base else [])

    def _names_module(self, value: str) -> bool:
        """A string that names a package module (the registry's way, "pkg.mod" or "pkg.mod:attr")."""
        name = value.split(":")[0]
        return name.split(".")[0] == PACKAGE and self._package_module(name) == name

    def _node(self, module: str, source: str, is_package: bool, segment: ast.AST | None = None) -> Node:
        """The digest of a module (or of one top-level definition of it, `segment`): its syntax
        tree without docstrings, with the package's own imports reduced to the names they bind
        and module names in strings blanked, and the package modules and data files it reads."""
        tree = ast.parse(source)
        if segment is None and module in ENTRY_TABLES:
            tree.body = [n for n in tree.body if _assigned_name(n) != ENTRY_TABLES[module]]
        scope = segment if segment is not None else tree
        imports: set[str] = set()
        # the module-level imports of a function's module run too
        nodes = list(ast.walk(scope))
        if segment is not None:
            nodes += [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for n in nodes:
            if isinstance(n, ast.ImportFrom):
                imports.update(self._imported(n, module, is_package))
            elif isinstance(n, ast.Import):
                imports.update(m for a in n.names if (m := self._package_module(a.name)))
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                if n.value and "/" not in n.value and not self._names_module(n.value):
                    imports.update(self.data_files.get(self._folder(module, is_package) / n.value, []))
        for parent in [i for i in imports if not i.startswith("data:")]:  # a.b.c runs a/__init__, a/b/__init__
            parts = parent.split(".")
            imports.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in self.sources)
        imports.discard(module)
        meaning = _Meaning(self, module, is_package).reduce(scope)
        text = ast.dump(meaning, annotate_fields=False, include_attributes=False)
        return Node(hashlib.sha256(text.encode()).hexdigest(), frozenset(imports))

    def _folder(self, module: str, is_package: bool) -> Path:
        parts = module.split(".")[1:] if is_package else module.split(".")[1:-1]
        return self.root.joinpath(*parts)

    def function_node(self, module: str, function: str) -> Node:
        """A function, with the module's other top-level definitions it uses (by name, in turn)."""
        source, is_package = self.sources[module]
        body = {}
        for n in ast.parse(source).body:
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                body[n.name] = n
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                for target in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    if isinstance(target, ast.Name):
                        body[target.id] = n
        if function not in body:
            raise ValueError(f"{module} has no function {function}")
        used, todo = [], [function]
        while todo:
            name = todo.pop()
            if name in body and body[name] not in used:
                used.append(body[name])
                todo.extend(n.id for n in ast.walk(body[name]) if isinstance(n, ast.Name))
        nodes = [self._node(module, source, is_package, segment=n) for n in used]
        digest = hashlib.sha256("".join(n.digest for n in nodes).encode()).hexdigest()
        return Node(digest, frozenset().union(*(n.imports for n in nodes)))

    def closure(self, modules) -> set[str]:
        """The modules (and data files) `modules` reach, with the packages that hold them."""
        todo = list(modules)
        for m in modules:  # importing a.b.c runs a/__init__ and a/b/__init__
            parts = m.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in self.sources]
        seen = set()
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(self.nodes[m].imports)
        return seen

    def digest(self, roots: list[Node], modules=()) -> str:
        """Digest of root nodes (functions) and every module they and `modules` reach."""
        reach = self.closure([*modules, *(i for r in roots for i in r.imports)])
        # sets of contents and of edges between contents: where a module lives (its name, its
        # package) is not part of what it does
        contents = sorted({r.digest for r in roots} | {self.nodes[m].digest for m in reach})
        edges = sorted({f"{self.nodes[a].digest}>{self.nodes[b].digest}" for a in reach for b in self.nodes[a].imports}
                       | {f"{r.digest}>{self.nodes[b].digest}" for r in roots for b in r.imports})
        return hashlib.sha256(json.dumps([contents, edges]).encode()).hexdigest()

    def subcommand(self, name: str) -> Node:
        """The function that implements subcommand `name`: `cmd_<name>` in a stage's cli.py
        (worked out once per name: a DAG asks for each subcommand's many times)."""
        if name not in self._subcommands:
            self._subcommands[name] = self._subcommand(name)
        return self._subcommands[name]

    def _subcommand(self, name: str) -> Node:
        function = "cmd_" + name.replace("-", "_")
        for module, (source, _) in self.sources.items():
            if module.endswith(".cli") and f"def {function}(" in source:
                return self.function_node(module, function)
        raise ValueError(f"no stage cli.py of {self.root} defines {function} (subcommand {name!r})")

    def code_digest(self, subcommand: str, *modules: str, entry: dict | None = None) -> str:
        """What decides a rerun of a job that runs `tempoformer <subcommand>`, with `modules`
        (dotted names: those the model registry names for a model type) and the job's own
        registry `entry` (JSON-able) on top."""
        missing = [m for m in modules if m not in self.sources]
        if missing:
            raise ValueError(f"modules {missing} are not in {self.root}")
        digest = self.digest([self.subcommand(subcommand)], modules)
        if entry is None:
            return digest
        return hashlib.sha256(json.dumps([digest, entry], sort_keys=True, default=str).encode()).hexdigest()


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and \
        (node.end_lineno, node.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)


def _assigned_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


class _Meaning(ast.NodeTransformer):
    """A syntax tree reduced to what it computes, for a digest: no docstrings (comments and
    layout are not in the tree at all); the package's own imports as the names they bind, not
    the module path they name (a moved module reruns nothing); a module named in a string (the
    registry's way) as "<module>"."""

    def __init__(self, graph: "ModuleGraph", module: str, is_package: bool):
        self.graph, self.module, self.is_package = graph, module, is_package

    def reduce(self, node):
        """The reduced tree of `node`, edited in place: every caller parses its own tree for it."""
        return self.visit(node) if node is not None else None

    def generic_visit(self, node):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return super().generic_visit(node)

    def visit_ImportFrom(self, node):
        if not self.graph._imported(node, self.module, self.is_package):
            return node
        return ast.Expr(ast.Constant("import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "")
                                                          for a in node.names)))

    def visit_Import(self, node):
        if not any(self.graph._package_module(a.name) for a in node.names):
            return node
        return ast.Expr(ast.Constant("import " + ", ".join(a.asname or "" for a in node.names)))

    def visit_Constant(self, node):
        if isinstance(node.value, str) and self.graph._names_module(node.value):
            return ast.Constant("<module>")
        return node


@functools.lru_cache(maxsize=None)
def graph(package_dir: str) -> ModuleGraph:
    return ModuleGraph(package_dir)


def settings_digest(*parts) -> str:
    """A short digest of JSON-able settings (a fingerprint chain's links)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


KERNEL_SETTINGS = "MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2"


def content_digest(paths) -> str:
    """sha1 over every file under `paths` (relative names and bytes), in a stable order."""
    return _content_digest(tuple([paths] if isinstance(paths, str) else paths))


@functools.lru_cache(maxsize=None)
def _content_digest(paths) -> str:
    # Every job of a dataset asks for the same digest while the DAG is built: read the files once.
    digest = hashlib.sha1()
    for root in paths:
        if os.path.isfile(root):
            files, base = [root], os.path.dirname(root)
        else:
            files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
            base = root
        for path in files:
            digest.update(os.path.relpath(path, base).encode() + b"\0")
            with open(path, "rb") as handle:
                digest.update(hashlib.sha1(handle.read()).digest())
    return digest.hexdigest()


def registry_entry(spec) -> dict:
    """What a model type's runs take from the model registry: its entry (type name, kind, module,
    builder, config, flags, extras, saver) and its kind's training defaults."""
    from .models.registry import TRAIN_DEFAULTS

    return {"entry": dataclasses.asdict(spec), "train_defaults": TRAIN_DEFAULTS.get(spec.kind)}


class RunFingerprints:
    """The fingerprint chain of a config's training runs: what a run was made from (code,
    settings, the raw corpus's content), chained along the DAG. The workflow
    (workflow/rules/common.smk) and `scripts/migrate_fingerprints.py` read it; a finished run
    records its fingerprint in metrics.json."""

    def __init__(self, config: dict, package_dir: str | os.PathLike):
        from .models.registry import MODEL_TYPES

        self.config = config
        self.package_dir = str(package_dir)
        self.model_types = MODEL_TYPES
        self.kernels = KERNEL_SETTINGS if config["portable_kernels"] else ""
        self._posts: dict[str, str] = {}

    @property
    def datasets(self) -> dict:
        return self.config.get("datasets", {})

    @property
    def models(self) -> dict:
        return self.config.get("models", {})

    def code(self, subcommand: str, *modules: str) -> str:
        return graph(self.package_dir).code_digest(subcommand, *modules)

    def model_type(self, model: str) -> str:
        """A model entry's type: its `type` key, or its name (`tempoformer_no_rope: {type: tempoformer}`)."""
        return self.models[model].get("type", model)

    def model_spec(self, model: str):
        return self.model_types[self.model_type(model)]

    def model_threads(self, model: str) -> int:
        return self.models[model].get("threads", self.config["threads"])

    def switched_off(self, model: str) -> bool:
        """An LLM entry without a model path (the paper configs list them all, off until set)."""
        return self.model_spec(model).kind == "llm" and not self.models[model]["params"].get("model")

    def dataset_models(self, dataset: str) -> list[str]:
        return [m for m in self.datasets[dataset]["models"] if not self.switched_off(m)]

    def model_folds(self, model: str) -> list[int]:
        return self.models[model].get("folds", list(range(self.config["n_folds"])))

    def model_seeds(self, model: str) -> list[int]:
        return self.models[model].get("seeds", self.config["seeds"])

    def configured_runs(self) -> list[tuple]:
        """(dataset, model, window, fold, seed) of every run the config asks for."""
        return [
            (dataset, model, window, fold, seed)
            for dataset in self.datasets
            for model in self.dataset_models(dataset)
            for window in self.models[model]["windows"]
            for fold in self.model_folds(model)
            for seed in self.model_seeds(model)
        ]

    def run_dir(self, dataset, model, window, fold, seed) -> str:
        return f"{self.config['results']}/{dataset}/runs/{model}/w{window}/fold{fold}/seed{seed}"

    def ingest_settings(self, dataset: str) -> dict:
        spec = self.datasets[dataset]
        return {"format": spec["format"], "options": spec.get("options", {}), "labels": spec["labels"]}

    def folds_settings(self, dataset: str) -> dict:
        return {"n_folds": self.config["n_folds"], "seed": self.config["fold_seed"],
                "dev_ratio": self.datasets[dataset].get("dev_ratio", 0.25)}

    def train_settings(self, model, dataset, window, fold, seed) -> dict:
        params = self.models[model]["params"]
        settings = {"type": self.model_type(model), "params": params,
                    "labels": self.datasets[dataset]["labels"], "window": int(window), "fold": int(fold),
                    "seed": int(seed), "threads": self.model_threads(model), "kernels": self.kernels}
        # a transformer's backbone (its setup's default: minilm), by its entry in the backbone table
        reads_backbone = "backbone" in dict(self.model_spec(model).extras)
        backbone = backbone_entry(params.get("backbone", "minilm")) if reads_backbone else None
        if backbone:
            settings["backbone"] = backbone
        return settings

    def raw(self, dataset: str) -> str:
        spec = self.datasets[dataset]
        if "synthetic" in spec:
            return settings_digest("synthetic-lrs", self.code("synthetic-lrs"), spec["synthetic"])
        if spec.get("path"):
            return content_digest(spec["path"])
        return ""  # a packaged corpus (chitchat): its version is pinned with the environment

    def posts(self, dataset: str) -> str:
        if dataset not in self._posts:
            self._posts[dataset] = settings_digest("ingest", self.code("ingest"), dataset,
                                                   self.ingest_settings(dataset), self.raw(dataset))
        return self._posts[dataset]

    def path_reduction(self, model: str) -> dict | None:
        """The reduction a stream model's path reads (SWNU, Seq-Sig-Net: `path_reduction: umap`,
        with `path_dimension` and `path_seed`; tempoformer.models.swnu): {method, dimension,
        seed}, the settings of the `reduce-embeddings` job whose file the run reads instead of
        sbert.npy; None for every other run (they read sbert.npy, their chain is unchanged). A
        fixed param only: a grid point cannot choose its own embeddings file."""
        params = self.models[model]["params"]
        keys = ("path_reduction", "path_dimension", "path_seed")
        in_grid = sorted(set(keys) & set(params.get("grid") or {}))
        if in_grid:
            raise ValueError(f"models.{model}.params.grid: {', '.join(in_grid)} choose the run's embeddings "
                             "file; give them as fixed params, not in the grid")
        method = params.get("path_reduction", "none")
        if method == "none":
            return None
        return {"method": method, "dimension": int(params.get("path_dimension", 15)),
                "seed": int(params.get("path_seed", 42))}

    def train_code(self, model: str) -> str:
        spec = self.model_spec(model)
        return graph(self.package_dir).code_digest("train", *spec.code_modules(), entry=registry_entry(spec))

    def run(self, dataset, model, window, fold, seed) -> str:
        spec, posts = self.model_spec(model), self.posts(dataset)
        upstream = [settings_digest("folds", self.code("folds"), posts, self.folds_settings(dataset))]
        if spec.needs_window:
            upstream.append(settings_digest("windows", self.code("windows"), posts, int(window)))
        if spec.needs_embeddings:
            embed = settings_digest("embed", self.code("embed"), posts, self.config["embedding_model"],
                                    self.kernels, backbone_entry(self.config["embedding_model"]))
            reduction = self.path_reduction(model)
            if reduction is not None:  # the run reads the reduce-embeddings job's file, made from sbert.npy
                embed = settings_digest("reduce", self.code("reduce-embeddings"), embed, reduction)
            upstream.append(embed)
        return settings_digest("train", self.train_code(model),
                               self.train_settings(model, dataset, window, fold, seed), posts, upstream)

    def all_runs(self) -> dict[str, str]:
        """run folder -> fingerprint, for every run the config asks for."""
        return {self.run_dir(*run): self.run(*run) for run in self.configured_runs()}

"""The package's import graph, read from the source (ast), lazy imports inside functions included:
the models do not import the training code (only its leaf modules, which import nothing of the
package), and there is no import cycle among the models, training and reporting modules
(issue 66)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "src" / "tempoformer"
# What the models may read from the training package: modules that import nothing of the package.
TRAINING_LEAVES = {"tempoformer.training.settings", "tempoformer.training.metrics"}


def module_sources() -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is_package)."""
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports anywhere in its body (`from a import b` counts
    a.b when b is a module, else a)."""
    sources = module_sources()
    graph = {}
    for module, (path, is_package) in sources.items():
        imports = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imports.update(a.name for a in node.names if a.name in sources)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("tempoformer"):
                    continue
                for alias in node.names:
                    imports.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in sources else target)
        imports.discard(module)
        graph[module] = {m for m in imports if m in sources}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_sees_lazy_imports():
    graph = import_graph()
    assert "tempoformer.models.registry" in graph["tempoformer.training.run"]
    # a function-level import (the setups import the settings inside setup())
    assert "tempoformer.training.settings" in graph["tempoformer.models.tempoformer"]


def test_models_import_only_the_training_leaves():
    graph = import_graph()
    for module, imports in graph.items():
        if in_package(module, "tempoformer.models"):
            reached = {m for m in imports if in_package(m, "tempoformer.training")}
            assert reached <= TRAINING_LEAVES, f"{module} imports {sorted(reached - TRAINING_LEAVES)}"
    for leaf in TRAINING_LEAVES:
        assert graph[leaf] == set(), f"{leaf} is no leaf: it imports {sorted(graph[leaf])}"


def test_no_cycle_among_models_training_and_reporting():
    found = [c for c in cycles(import_graph())
             if any(in_package(m, p) for m in c
                    for p in ("tempoformer.models", "tempoformer.training", "tempoformer.reporting"))]
    assert found == [], f"import cycles: {[sorted(c) for c in found]}"


def test_no_cycle_between_the_subpackages_but_through_leaves():
    """Subpackage level (tempoformer.models, tempoformer.training, ...; a top-level module is its
    own node): an import of a leaf module (one that imports nothing of the package, such as
    training/settings.py) cannot close a cycle and is left out; every other import is an edge."""
    graph = import_graph()

    def subpackage(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for module, imports in graph.items():
        packages.setdefault(subpackage(module), set()).update(
            subpackage(m) for m in imports if graph[m] and subpackage(m) != subpackage(module))
    found = [c for c in cycles(packages)
             if c & {"tempoformer.models", "tempoformer.training", "tempoformer.reporting"}]
    assert found == [], f"subpackage import cycles: {[sorted(c) for c in found]}"


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_each_settings_class_has_its_own_name():
    """One settings class per name in the package: the training loop's, the MLM post-pretraining's
    and DCWE's settings used to be three classes named TrainSettings."""
    seen: dict[str, str] = {}
    clashes = []
    for module, (path, _) in module_sources().items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Settings"):
                if node.name in seen:
                    clashes.append(f"{node.name}: {seen[node.name]} and {module}")
                seen[node.name] = module
    assert clashes == []


def defined_functions(name: str) -> list[str]:
    """The modules that define a module-level function `name`."""
    return [module for module, (path, _) in module_sources().items()
            for node in ast.parse(path.read_text(), str(path)).body
            if isinstance(node, ast.FunctionDef) and node.name == name]


def test_backbone_path_and_job_setup_have_one_home_without_torch():
    """backbone_path lives in backbones.py (data/embed.py had it, dcwe/cli.py a hand copy), the
    stage CLIs' job start in cli_common.py (three `_setup`s before); importing either leaves
    torch unimported."""
    import subprocess
    import sys

    assert defined_functions("backbone_path") == ["tempoformer.backbones"]
    assert defined_functions("job_setup") == ["tempoformer.cli_common"]
    assert defined_functions("_setup") == []
    graph = import_graph()
    assert graph["tempoformer.backbones"] == set() and graph["tempoformer.cli_common"] == {"tempoformer.device"}
    for stage in ("dcwe", "semantic_change", "future_lm"):
        assert "tempoformer.cli_common" in graph[f"tempoformer.{stage}.cli"], stage
    code = ("import sys; import tempoformer.backbones, tempoformer.cli_common; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)

"""Code fingerprints derived from the import graph (src/tempoformer/fingerprint.py): what a change
to the package's code reruns, on a small package written here and on the real one."""

import shutil
from pathlib import Path

import pytest

from tempoformer.cli import build_parser
from tempoformer.fingerprint import ModuleGraph
from tempoformer.models.registry import MODEL_TYPES

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tempoformer"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "tempoformer" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "tempoformer"


TOY = {
    "__init__.py": "",
    "leaf.py": "def f(x):\n    return x + 1\n",
    "other.py": "def g():\n    return 2\n",
    "stage/__init__.py": "",
    "stage/middle.py": "from ..leaf import f\n\n\ndef h(x):\n    return f(x) * 2\n",
    "stage/cli.py": (
        "import argparse\n\n\n"
        "def cmd_first(args):\n    from .middle import h\n\n    return h(1)\n\n\n"
        "def cmd_second(args):\n    from ..other import g\n\n    return helper(g())\n\n\n"
        "def helper(x):\n    from ..leaf import f\n\n    return f(x)\n"
    ),
    "registry.py": 'MODELS = {"a": "tempoformer.other"}\n',
    "paper/numbers.csv": "a,b\n1,2\n",
    "reader.py": 'from pathlib import Path\n\nDIR = Path(__file__).with_name("paper")\n',
}


def digests(root: Path) -> dict[str, str]:
    graph = ModuleGraph(root)
    return {"first": graph.code_digest("first"), "second": graph.code_digest("second"),
            "registry": graph.code_digest("first", "tempoformer.registry"),
            "reader": graph.code_digest("first", "tempoformer.reader")}


def test_a_transitive_edit_changes_exactly_the_commands_that_reach_it(tmp_path):
    root = write(tmp_path, TOY)
    before = digests(root)
    (root / "stage" / "middle.py").write_text(TOY["stage/middle.py"] + "\nLIMIT = 3\n")
    after = digests(root)
    assert after["first"] != before["first"]  # cmd_first -> middle
    assert after["second"] == before["second"]  # cmd_second never imports middle

    (root / "leaf.py").write_text("def f(x):\n    return x + 2\n")
    again = digests(root)
    # leaf is reached by cmd_first through middle, by cmd_second through a helper in its module
    assert again["first"] != after["first"] and again["second"] != after["second"]


def test_comments_docstrings_and_layout_change_no_digest(tmp_path):
    root = write(tmp_path, TOY)
    before = digests(root)
    (root / "stage" / "middle.py").write_text(
        '"""A module docstring."""\n# a comment\nfrom ..leaf import f\n\n\n\n'
        'def h(x):  # why h doubles\n    """Twice f."""\n    return (f(x)\n            * 2)\n')
    (root / "leaf.py").write_text("def f(x):\n\n    return x+1  # spaces around + are layout\n")
    assert digests(root) == before
    (root / "leaf.py").write_text("def f(x):\n    return x + 1.0\n")  # an int became a float
    assert digests(root)["first"] != before["first"]


def test_a_string_that_is_not_a_docstring_still_counts(tmp_path):
    root = write(tmp_path, TOY)
    before = digests(root)
    (root / "leaf.py").write_text('def f(x):\n    y = x + 1\n    "the second statement is data"\n    return y\n')
    changed = digests(root)["first"]
    (root / "leaf.py").write_text('def f(x):\n    y = x + 1\n    "another string"\n    return y\n')
    assert digests(root)["first"] != changed != before["first"]


def test_a_registry_entry_is_a_digest_of_its_own(tmp_path):
    """models/registry.py's MODEL_TYPES is left out of its module's digest; a job adds its entry."""
    files = {**TOY, "models/__init__.py": "",
             "models/registry.py": 'DEFAULTS = {"lr": 1}\nMODEL_TYPES = {"a": ("tempoformer.other", 1)}\n'}
    files["stage/middle.py"] = "from ..models import registry\n" + TOY["stage/middle.py"]
    root = write(tmp_path, files)
    before = ModuleGraph(root).code_digest("first")
    registry = root / "models" / "registry.py"
    registry.write_text('DEFAULTS = {"lr": 1}\nMODEL_TYPES = {"a": ("tempoformer.other", 1), "b": ("x", 2)}\n')
    assert ModuleGraph(root).code_digest("first") == before
    registry.write_text('DEFAULTS = {"lr": 2}\nMODEL_TYPES = {"a": ("tempoformer.other", 1)}\n')
    assert ModuleGraph(root).code_digest("first") != before
    graph = ModuleGraph(root)
    assert graph.code_digest("first", entry={"a": 1}) != graph.code_digest("first", entry={"a": 2})


def test_moving_a_module_and_fixing_its_imports_changes_no_digest(tmp_path):
    root = write(tmp_path, TOY)
    before = digests(root)
    shutil.move(root / "leaf.py", root / "stage" / "basics.py")
    (root / "stage" / "middle.py").write_text(TOY["stage/middle.py"].replace("from ..leaf", "from .basics"))
    cli = (root / "stage" / "cli.py")
    cli.write_text(cli.read_text().replace("from ..leaf import f", "from .basics import f"))
    # a module named in a string (the registry's way) moves too
    shutil.move(root / "other.py", root / "stage" / "others.py")
    cli.write_text(cli.read_text().replace("from ..other import g", "from .others import g"))
    (root / "registry.py").write_text('MODELS = {"a": "tempoformer.stage.others"}\n')
    assert digests(root) == before


def test_rewiring_an_import_to_another_module_changes_the_digest(tmp_path):
    files = {**TOY, "leaf2.py": "def f(x):\n    return x - 1\n"}
    root = write(tmp_path, files)
    before = digests(root)
    (root / "stage" / "middle.py").write_text(TOY["stage/middle.py"].replace("..leaf", "..leaf2"))
    assert digests(root)["first"] != before["first"]


def test_a_data_file_counts_for_the_module_that_names_its_folder(tmp_path):
    root = write(tmp_path, TOY)
    before = digests(root)
    (root / "paper" / "numbers.csv").write_text("a,b\n1,3\n")
    after = digests(root)
    assert after["reader"] != before["reader"]
    assert after["first"] == before["first"]


def test_every_subcommand_has_a_cmd_function_the_graph_finds():
    graph = ModuleGraph(PACKAGE)
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    for name, sub in subparsers.choices.items():
        func = sub.get_default("func")
        assert func.__name__ == "cmd_" + name.replace("-", "_"), name
        graph.subcommand(name)  # raises when the graph cannot find it


def test_model_types_differ_only_by_their_own_modules():
    """A baseline's train code does not include TempoFormer's modules, and the reverse."""
    graph = ModuleGraph(PACKAGE)
    train = graph.subcommand("train").imports

    def reach(kind):
        return graph.closure([*train, *MODEL_TYPES[kind].code_modules()])

    assert "tempoformer.models.tempoformer" not in reach("swnu")
    assert "tempoformer.models.swnu" not in reach("tempoformer")
    assert "tempoformer.serving.saved_model" in reach("tempoformer")
    assert {"tempoformer.models.signature", "tempoformer.models.swnu"} <= reach("seqsignet")


@pytest.mark.parametrize("name", ["ingest", "train", "aggregate"])
def test_real_package_digest_is_stable(name):
    assert ModuleGraph(PACKAGE).code_digest(name) == ModuleGraph(PACKAGE).code_digest(name)


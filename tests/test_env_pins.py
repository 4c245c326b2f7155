"""envs/tempoformer.yaml (cluster users, `--use-conda`) and pyproject.toml (pip users) pin the same
packages at the same versions, so both installs run what the results were measured with."""

import re
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from conftest import REPO

# In the conda file only, never in pyproject's dependencies: the interpreter (checked against
# requires-python), pip (installs the pip: section), and setuptools, which
# envs/tempoformer.post-deploy.sh builds the package with (--no-build-isolation), so it must
# satisfy pyproject's [build-system] requires instead.
CONDA_ONLY = {"python", "pip", "setuptools"}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(requirements: list[str]) -> dict[str, str]:
    """{normalised name: exact version}; an entry not pinned with a single `==` is refused."""
    pinned = {}
    for line in requirements:
        requirement = Requirement(line)
        specs = list(requirement.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"{line!r} is not pinned with =="
        name = normalise(requirement.name)
        assert name not in pinned, f"{requirement.name} listed twice"
        pinned[name] = specs[0].version
    return pinned


def disagreements(pyproject: dict[str, str], conda: dict[str, str]) -> list[str]:
    problems = [f"{name}: pyproject.toml =={pyproject[name]}, envs/tempoformer.yaml =={conda[name]}"
                for name in sorted(pyproject.keys() & conda.keys()) if pyproject[name] != conda[name]]
    problems += [f"{name}=={pyproject[name]} only in pyproject.toml" for name in sorted(pyproject.keys() - conda.keys())]
    problems += [f"{name}=={conda[name]} only in envs/tempoformer.yaml" for name in sorted(conda.keys() - pyproject.keys())]
    return problems


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def environment() -> tuple[dict[str, str], list[str]]:
    """(the conda-only entries by name, the pip: section's lines) of envs/tempoformer.yaml."""
    dependencies = yaml.safe_load((REPO / "envs" / "tempoformer.yaml").read_text())["dependencies"]
    pip = [entry for entry in dependencies if isinstance(entry, dict)]
    assert len(pip) == 1 and list(pip[0]) == ["pip"], pip
    conda = {normalise(re.split(r"[=<>!~ ]", entry, maxsplit=1)[0]): entry
             for entry in dependencies if isinstance(entry, str)}
    return conda, pip[0]["pip"]


def test_conda_and_pip_pin_the_same_versions(project, environment):
    _, pip_lines = environment
    pip = pins(pip_lines)
    assert not pip.keys() & CONDA_ONLY, "conda-only tooling belongs outside the pip: section"
    assert disagreements(pins(project["project"]["dependencies"]), pip) == []


def test_conda_only_entries_are_the_named_tooling(project, environment):
    conda_only, _ = environment
    assert set(conda_only) == CONDA_ONLY, "a conda package that pyproject.toml lacks, or tooling not named here"
    assert not CONDA_ONLY & set(pins(project["project"]["dependencies"]))
    python = re.fullmatch(r"python=(\d+\.\d+)", conda_only["python"])
    assert python and SpecifierSet(project["project"]["requires-python"]).contains(f"{python[1]}.0")
    build = [Requirement(r) for r in project["build-system"]["requires"]]
    setuptools = next(r for r in build if normalise(r.name) == "setuptools")
    assert Requirement(conda_only["setuptools"]).specifier == setuptools.specifier


def test_a_disagreement_is_named():
    """The comparison itself: a version, a missing package and a spelling variant."""
    pyproject = pins(["PyYAML==6.0.3", "scikit-learn==1.9.1", "torch==2.13.0"])
    conda = pins(["pyyaml==6.0.3", "scikit_learn==1.9.0", "numpy==2.4.6"])
    assert disagreements(pyproject, conda) == [
        "scikit-learn: pyproject.toml ==1.9.1, envs/tempoformer.yaml ==1.9.0",
        "torch==2.13.0 only in pyproject.toml",
        "numpy==2.4.6 only in envs/tempoformer.yaml",
    ]
    with pytest.raises(AssertionError, match="not pinned"):
        pins(["torch>=2.13"])

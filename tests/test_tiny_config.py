"""The smoke config (`snakemake --configfile config/tiny.yaml`, typed at the repository root) writes
nothing that git tracks: its tables and figures once replaced the committed default tables under
results/tables/. Every file its DAG would write (outputs, logs, benchmarks) is listed by a forced
dry run and compared with `git ls-files`."""

import re
import shutil
import subprocess

import pytest

from conftest import REPO, snakemake

FIELDS = re.compile(r"^\s+(?:output|log|benchmark): (.+)$", re.M)


def git(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], input=stdin, capture_output=True, text=True)


@pytest.fixture(scope="module")
def tracked() -> set[str]:
    if shutil.which("git") is None or git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git checkout")
    return set(git("ls-files", "-z").stdout.split("\0")) - {""}


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> set[str]:
    """Every path the tiny config's whole DAG writes, relative to the working directory (the
    repository root when a user runs it), from `snakemake -n --forceall`'s job listing."""
    workdir = tmp_path_factory.mktemp("tiny_dry_run")
    config = workdir / "tiny.yaml"
    shutil.copy(REPO / "config" / "tiny.yaml", config)
    result = snakemake(workdir, config, "-n", "--forceall")
    assert result.returncode == 0, result.stderr[-3000:]
    paths = {path.strip() for field in FIELDS.findall(result.stdout + result.stderr)
             for path in field.split(",")}
    # the parse must see the whole DAG, or the test below would pass on nothing
    assert len(paths) > 100 and any(p.endswith("/table2.md") for p in paths), sorted(paths)
    return paths


def test_tiny_config_writes_no_tracked_file(planned, tracked):
    clashes = sorted(path for path in planned
                     if path in tracked or any(t.startswith(path.rstrip("/") + "/") for t in tracked))
    assert not clashes, f"config/tiny.yaml would overwrite {len(clashes)} committed files: {clashes}"


def test_tiny_config_outputs_are_ignored_by_git(planned):
    """A smoke run leaves `git status` clean: every path it writes is ignored (a tracked path
    never counts as ignored, so this also catches a committed file)."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    ignored = set(git("check-ignore", "--stdin", stdin="\n".join(sorted(planned)) + "\n").stdout.splitlines())
    assert sorted(planned - ignored) == []

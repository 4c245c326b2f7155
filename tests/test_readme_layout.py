"""README.md's layout block (the code block of its "## Layout" section) names every module of the
package and every rule file, script and benchmark, and names no file that is not there.

The block is a tree: a line whose text starts before column DESCRIPTION is an entry, its first
word a file or a folder (ending in "/", possibly several segments such as `src/tempoformer/`),
two spaces of indentation per level; text from column DESCRIPTION on is description (a line
that starts there continues the entry above)."""

import re
import subprocess

import pytest

from conftest import REPO

DESCRIPTION = 32
# (folder, which of its files the block must name)
REQUIRED = [("src/tempoformer", lambda path: path.endswith(".py")),
            ("workflow/rules", lambda path: True),
            ("scripts", lambda path: True),
            ("bench", lambda path: True)]


def layout_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert section, "README.md has no '## Layout' section"
    block = re.search(r"^```\n(.*?)^```", section[1], re.M | re.S)
    assert block, "README.md's Layout section has no code block"
    return block[1].splitlines()


def named_paths() -> tuple[set[str], set[str]]:
    """(files, folders) the block names, as paths from the repository root."""
    files, folders, stack = set(), set(), []
    for number, line in enumerate(layout_block(), 1):
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= DESCRIPTION:
            continue
        assert indent % 2 == 0 and indent // 2 <= len(stack), f"layout line {number}: bad indentation: {line!r}"
        stack = stack[:indent // 2]
        name = line.split()[0]
        path = "".join(stack) + name
        if name.endswith("/"):
            stack.append(name)
            folders.add(path.rstrip("/"))
        else:
            files.add(path)
    return files, folders


def files_under(folder: str) -> list[str]:
    """Tracked files and new ones git does not ignore (what the other engineers are adding)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard",
                             "--", folder], capture_output=True, text=True)
    if listed.returncode == 0:
        paths = listed.stdout.splitlines()
    else:  # not a git checkout
        paths = [str(p.relative_to(REPO)) for p in (REPO / folder).rglob("*") if p.is_file()]
    return sorted(p for p in paths if "__pycache__" not in p and (REPO / p).is_file())


@pytest.mark.parametrize("folder, wanted", REQUIRED, ids=[folder for folder, _ in REQUIRED])
def test_layout_names_every_file(folder, wanted):
    files, _ = named_paths()
    missing = [path for path in files_under(folder) if wanted(path) and path not in files]
    assert missing == [], f"README.md's Layout block does not name {missing}"


def test_layout_names_only_files_that_exist():
    files, folders = named_paths()
    assert sorted(p for p in files if not (REPO / p).is_file()) == []
    assert sorted(p for p in folders if not (REPO / p).is_dir()) == []

"""Atomic writes: complete files or none, readable by others as a plain open() would leave them."""

import os
import stat

import polars as pl
import pytest

from tempoformer.atomic import atomic_dir, write_text_atomic, write_with
from tempoformer.data.posts import write_parquet_atomic


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_outputs_follow_the_umask_not_the_temporary_files_0600(tmp_path, umask_022):
    write_parquet_atomic(pl.DataFrame({"a": [1, 2]}), tmp_path / "posts.parquet")
    write_text_atomic(tmp_path / "table.md", "| a |\n")
    write_with(tmp_path / "x.bin", lambda tmp: tmp.write_bytes(b"\0"))
    with atomic_dir(tmp_path / "model") as folder:
        (folder / "weights").write_bytes(b"w")
    assert mode(tmp_path / "posts.parquet") == 0o644
    assert mode(tmp_path / "table.md") == 0o644
    assert mode(tmp_path / "x.bin") == 0o644
    assert mode(tmp_path / "model") == 0o755


def test_a_failing_writer_leaves_nothing(tmp_path):
    def boom(tmp):
        tmp.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_with(tmp_path / "out.txt", boom)
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "model") as folder:
            (folder / "weights").write_bytes(b"w")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_replacing_keeps_the_old_file_until_the_new_one_is_complete(tmp_path):
    target = tmp_path / "metrics.json"
    write_text_atomic(target, "old")
    with pytest.raises(RuntimeError):
        write_with(target, lambda tmp: (tmp.write_text("new, half"), (_ for _ in ()).throw(RuntimeError())))
    assert target.read_text() == "old"

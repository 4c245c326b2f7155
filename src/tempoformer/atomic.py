"""Atomic writes: a file appears complete under its name or not at all.

Every output of the pipeline is written to a temporary sibling and renamed into place, so a
failure or a kill leaves no partial file. The temporary file gets the permissions a plain
`open()` would give (0666 minus the umask): collaborators on a shared filesystem can read the
outputs, whatever `tempfile` chose for the temporary name.

A full disk (ENOSPC) or an exhausted quota (EDQUOT) while writing raises `DiskFull`, an OSError
whose message says "no space left on device" and names the file that was being written; the
partial temporary file is removed first.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator


class DiskFull(OSError):
    """No space left (or the quota exhausted) while writing `path`: nothing was left behind."""

    def __init__(self, path, error: OSError, kind: str = "file"):
        quota = error.errno == errno.EDQUOT
        problem = "disk quota exceeded" if quota else "no space left on device"
        super().__init__(error.errno, f"{problem} while writing {path} (the partial {kind} was removed; "
                                      "free some space and run again)", str(path))
        self.path = str(path)

    def __str__(self) -> str:
        return self.strerror


FULL = (errno.ENOSPC, errno.EDQUOT)


@contextlib.contextmanager
def _disk_full_names(path: Path, kind: str = "file") -> Iterator[None]:
    try:
        yield
    except DiskFull:
        raise
    except OSError as error:
        if error.errno in FULL:
            raise DiskFull(path, error, kind) from error
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it is renamed to `path` with the
    umask's file mode, on any error it is removed. `suffix` keeps an extension that a writer
    insists on (np.save adds .npy to a name without it)."""
    path = Path(path)
    with _disk_full_names(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{suffix}")
        os.close(fd)
        tmp = Path(tmp)
        try:
            yield tmp
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary folder beside `path`; on success it replaces `path` (an older
    folder of that name is removed), on any error it is removed. Mode 0777 minus the umask."""
    path = Path(path)
    with _disk_full_names(path, "folder"):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
        try:
            tmp.chmod(0o777 & ~_umask())
            yield tmp
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def write_with(path: str | os.PathLike, writer: Callable[[Path], object], suffix: str = "") -> Path:
    """Call writer(tmp) and rename tmp to `path` (for writers that take a path: parquet, torch)."""
    with atomic_path(path, suffix) as tmp:
        writer(tmp)
    return Path(path)

"""Process locks that the kernel releases when their holder dies, however it dies.

- `run_lock(out_dir)`: one trainer at a time on a run folder (its checkpoints). A second one
  fails at once with `RunLocked`, naming the folder and the holder's PID and host.
- `release_stale_snakemake_locks()`: called from the Snakefile, so that a run killed with
  `kill -9` (whose `.snakemake/locks` stay behind) does not need `snakemake --unlock`.

Both use `flock`: the lock belongs to an open file, so it goes when the holding process exits
or is killed, while the lock file itself stays (it is never removed: unlinking a lock file
another process has open lets two processes hold "the" lock).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shutil
import socket
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)

RUN_LOCK_NAME = ".trainer.lock"
WORKFLOW_LOCK_NAME = "tempoformer-alive.lock"

# Lock files this process holds for its whole life (path → descriptor).
_held_for_life: dict[str, int] = {}


class RunLocked(ValueError):
    """Another live process holds the run folder."""


# flock refused by the file system (Lustre mounted without `flock`, some FUSE mounts)
UNSUPPORTED = (errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK, errno.EINVAL)


def _try_lock(fd: int, path: Path, operation: int) -> bool | None:
    """True: locked; False: another process holds it (non-blocking); None: the file system
    has no flock, so nothing can be known: go on without the lock, as before it existed."""
    try:
        fcntl.flock(fd, operation)
        return True
    except BlockingIOError:
        return False
    except OSError as error:
        if error.errno not in UNSUPPORTED:
            raise
        log.warning("%s: the file system does not support flock (%s); not locked", path, error)
        return None


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 200).decode(errors="replace").split()
    # empty while the holder is between taking the lock and writing its PID
    return f"PID {text[0]} on {text[1]}" if len(text) >= 2 else "PID unknown"


@contextmanager
def run_lock(out_dir) -> Iterator[Path]:
    """Hold `<out_dir>/.trainer.lock` while the block runs; raise `RunLocked` if another
    process holds it. Yields the lock file's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RUN_LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o664)
    try:
        locked = _try_lock(fd, path, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if locked is False:
            raise RunLocked(
                f"{out_dir}: another trainer ({_holder(fd)}) is training this run and holds "
                f"{path}; wait for it to finish, or stop it, then run again"
            )
        if locked:
            # the host too: on a cluster the holder may run on another node
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock if this process took it


def release_stale_snakemake_locks(snakemake_dir=".snakemake") -> bool:
    """Mark this Snakemake process as a live run of the workflow for the rest of its life, and
    remove `<snakemake_dir>/locks` if no other live run is marked: those locks were left by a
    killed run. Returns True when it removed them.

    Every main Snakemake process of the workflow holds a shared flock on one file; a process
    that can take it exclusively is the only one alive. Snakemake's own locks record no PID,
    so this is what tells a stale lock from a live one. Removing them is what
    `snakemake --unlock` does (file persistence backend).
    """
    directory = Path(snakemake_dir).resolve()
    path = directory / WORKFLOW_LOCK_NAME
    if str(path) in _held_for_life:  # the Snakefile was parsed again in this process
        return False
    directory.mkdir(parents=True, exist_ok=True)
    # O_CLOEXEC: jobs that outlive a killed Snakemake must not keep it marked alive
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o664)
    removed = False
    alone = _try_lock(fd, path, fcntl.LOCK_EX | fcntl.LOCK_NB)
    if alone is None:  # nothing can be known: Snakemake's locks are left as they are
        os.close(fd)
        return False
    if alone:  # else another run is alive: its locks are real, Snakemake will honour them
        locks = directory / "locks"
        if locks.is_dir() and any(locks.iterdir()):
            shutil.rmtree(locks)
            removed = True
            print(f"Removed the locks of a Snakemake run that is no longer running ({locks}).",
                  file=sys.stderr)
    # shared for the rest of this process's life; blocks only while another run is at the
    # step above
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held_for_life[str(path)] = fd
    return removed

"""One trainer per run folder, and Snakemake locks told stale from live, across real processes."""

import errno
import fcntl
import signal
import subprocess
import sys
import textwrap

import pytest

from tempoformer.training.lock import RunLocked, release_stale_snakemake_locks, run_lock

# A second process that takes a lock, says so, and holds it until its stdin closes.
HOLD = textwrap.dedent("""
    import sys
    from tempoformer.training.lock import run_lock, release_stale_snakemake_locks
    kind, path = sys.argv[1:]
    if kind == "run":
        with run_lock(path):
            print("held", flush=True)
            sys.stdin.read()
    else:
        release_stale_snakemake_locks(path)
        print("held", flush=True)
        sys.stdin.read()
""")


def hold(kind, path):
    process = subprocess.Popen([sys.executable, "-c", HOLD, kind, str(path)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "held\n"
    return process


def release(process, kill=False):
    if kill:
        process.send_signal(signal.SIGKILL)
    else:
        process.stdin.close()
    process.wait(timeout=30)


def test_second_trainer_fails_at_once_naming_folder_and_holder(tmp_path):
    run = tmp_path / "runs" / "tempoformer" / "w3" / "fold0" / "seed0"
    holder = hold("run", run)
    try:
        with pytest.raises(RunLocked) as error, run_lock(run):
            pass
        assert str(run) in str(error.value)
        assert f"PID {holder.pid} " in str(error.value)
    finally:
        release(holder)
    with run_lock(run) as lock:  # the holder ended: the run is free again
        assert lock.read_text().split()[0].isdigit()


def test_lock_of_a_killed_trainer_does_not_block(tmp_path):
    holder = hold("run", tmp_path)
    release(holder, kill=True)
    assert (tmp_path / ".trainer.lock").exists()  # the file stays, the lock went with the process
    with run_lock(tmp_path):
        pass


def test_the_lock_is_held_only_inside_the_block(tmp_path):
    with run_lock(tmp_path), pytest.raises(RunLocked), run_lock(tmp_path):
        pass
    with run_lock(tmp_path):
        pass


def test_training_a_locked_run_fails_before_reading_anything(tmp_path):
    from tempoformer.training.run import TrainRun, run_training

    holder = hold("run", tmp_path)
    try:
        # missing inputs: the lock is checked first, so the error is the lock, not the files
        with pytest.raises(RunLocked, match=f"PID {holder.pid} "):
            run_training(TrainRun(posts_path=tmp_path / "posts.parquet", folds_path=tmp_path / "folds.parquet",
                                  out_dir=tmp_path, model="random", params={}, labels=["A", "B"], window=1,
                                  fold=0, seed=0))
    finally:
        release(holder)


def stale_locks(snakemake_dir):
    locks = snakemake_dir / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text("results/chitchat/posts.parquet\n")
    return locks


def test_snakemake_locks_of_a_dead_run_are_removed(tmp_path):
    snakemake_dir = tmp_path / ".snakemake"
    locks = stale_locks(snakemake_dir)
    assert release_stale_snakemake_locks(snakemake_dir)
    assert not locks.exists()
    # the Snakefile parsed again in the same process: nothing more to do
    assert not release_stale_snakemake_locks(snakemake_dir)


def test_snakemake_locks_of_a_live_run_stay_until_it_is_killed(tmp_path):
    snakemake_dir = tmp_path / ".snakemake"
    live = hold("snakemake", snakemake_dir)
    locks = stale_locks(snakemake_dir)
    second = hold("snakemake", snakemake_dir)  # a second run beside the live one
    assert locks.exists()
    release(live, kill=True)
    release(second, kill=True)
    third = hold("snakemake", snakemake_dir)  # no run is alive: the locks are stale
    release(third)
    assert not locks.exists()


def test_without_flock_support_the_locks_step_aside(tmp_path, monkeypatch):
    """Some cluster file systems refuse flock (Lustre without `-o flock`): training goes on
    unlocked, and Snakemake's locks are left to Snakemake, rather than every job failing."""
    def refuse(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", refuse)
    with run_lock(tmp_path):
        pass
    locks = stale_locks(tmp_path / ".snakemake")
    assert not release_stale_snakemake_locks(tmp_path / ".snakemake")
    assert locks.exists()

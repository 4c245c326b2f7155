"""What the stage CLIs share when a job starts (the subcommands' argument types are in arguments.py).

Imports nothing heavy at module level: `tempoformer --help` and the argument parsing stay free of
torch and transformers.
"""

from __future__ import annotations

import os


def job_setup(threads: int | None, device: str | None, *, quiet_transformers: bool = True) -> str:
    """A job's start: the HF hub offline, `threads` torch threads (None: torch's own choice), and
    the device to run on (default: cuda if available). quiet_transformers hides transformers'
    progress bars (the stages that load models with it); False leaves transformers unimported."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if quiet_transformers:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    from .device import pick_device, set_threads

    set_threads(threads)
    return pick_device(device)

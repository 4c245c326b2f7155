"""The `tempoformer` command itself."""


def test_the_command_sets_passive_waiting_before_torch_starts():
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = ("import sys; from tempoformer.cli import main, quiet_waiting_threads; "
            "assert 'torch' not in sys.modules; quiet_waiting_threads(); import os; "
            "print(os.environ['OMP_WAIT_POLICY'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "PASSIVE"

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


def test_every_flag_of_every_subcommand_has_help():
    from tempoformer.cli import build_parser

    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    missing = [f"{name} {action.option_strings[0]}" for name, sub in subparsers.choices.items()
               for action in sub._actions if action.option_strings and action.dest != "help" and not action.help]
    assert missing == []

"""Every command has help text, and --help works on each (sqlite-utils' habit)."""

import click
import pytest
from click.testing import CliRunner

from dbarena.cli import cli, load_commands
from dbarena.cli.app import COMMAND_MODULES, COMMANDS

load_commands()


def _commands(group, prefix=()):
    for name, cmd in group.commands.items():
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))


@pytest.mark.parametrize("path, cmd", list(_commands(cli)), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_command_has_help(path, cmd):
    assert cmd.help and cmd.help.strip()
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output
    for param in cmd.params:
        if isinstance(param, click.Option) and param.name != "help":
            assert param.help, f"{' '.join(path)} {param.opts[0]} has no help"


def test_every_command_is_found_by_its_module():
    """The lazy root group names every command the modules define, and no other."""
    assert set(cli.commands) == set(COMMAND_MODULES)
    assert all(f"dbarena.cli.{COMMAND_MODULES[name]}" == cmd.callback.__module__ for name, cmd in cli.commands.items())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_dbarena_help_lists_each_command_as_its_own_help_begins(name):
    """`dbarena --help` lists the commands from COMMANDS without importing them: at
    every width it can be printed at (50 to 100 columns), each line as click would cut
    the command's own help."""
    listed = click.Command(name, help=COMMANDS[name][1])
    for limit in range(20, 100 - 2 - 6 - len("hostinfo") + 1):
        assert listed.get_short_help_str(limit) == cli.commands[name].get_short_help_str(limit), limit


def test_dbarena_help_imports_no_command_module_and_no_numpy():
    """Issue 57: --help took 2-3 s loading every command's module and numpy. In a process
    of its own: this one has imported them all."""
    import subprocess
    import sys

    code = ("import sys\nfrom dbarena.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('dbarena.cli.') or m in ('numpy', 'rich')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Commands:" in done.stdout
    assert done.stdout.splitlines()[-1] == "['dbarena.cli.app']"


def test_what_psycopg_logs_is_not_printed_between_the_commands_lines():
    """Issue 45: a SIGTERM mid-query inside a `with connection:` block made psycopg log
    "error ignored in rollback on <psycopg.Connection ...>", which Python's last-resort
    handler printed among the run's lines. In a process of its own: pytest's log
    capture would hide the last-resort handler here."""
    import subprocess
    import sys

    code = ("import logging\nfrom dbarena.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n"
            "    pass\nlogging.getLogger('psycopg').warning('error ignored in rollback on <psycopg.Connection>')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("dbarena"), done.stdout + done.stderr
    assert done.stderr == ""



def test_the_help_and_the_text_commands_do_not_load_matplotlib():
    """matplotlib takes about a third of a second to import: only what draws a chart
    loads it, not `dbarena --help` (which loads no command's module), nor `history --help`."""
    import subprocess
    import sys

    code = ("import sys\nfrom dbarena.cli import main\nfor argv in (['--help'], ['history', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Usage:" in done.stdout, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("module, argv", [("dbarena.limits", ["--version"]),
                                          ("dbarena.lifecycle.cleanup", ["results", "--help"]),
                                          ("numpy", ["run", "--help"])],
                         ids=["the command line's", "what every command loads first", "a command's own (numpy)"])
def test_a_ctrl_c_while_the_command_line_loads_is_an_interrupted_exit_not_a_traceback(module, argv):
    """Issue 45: a Ctrl-C within the first second of `dbarena ...` (its modules loading)
    printed the traceback of an import, or (during numpy's) "RuntimeError: Unable to
    configure default ndarray.__str__". The SIGINT here comes as `module` is imported,
    inside initialisation code that turns whatever interrupts it into an error of its
    own, as numpy's does; in a process of its own, as the terminal's would be."""
    import subprocess
    import sys

    code = ("import builtins, os, runpy, signal, sys\nreal = builtins.__import__\n"
            "def imported(name, *args, **kwargs):\n"
            f"    if name == {module!r} and name not in sys.modules:\n"
            "        try:\n"
            "            os.kill(os.getpid(), signal.SIGINT)\n"
            "            sum(range(100000))\n"
            "        except BaseException:\n"
            "            raise RuntimeError('Unable to configure default ndarray.__str__')\n"
            "    return real(name, *args, **kwargs)\n"
            f"builtins.__import__ = imported\nsys.argv = ['dbarena', *{argv!r}]\n"
            "runpy.run_module('dbarena', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr and done.stdout == "", done.stderr

"""One front, one spelling: the options several commands share (--course, --db-url, --jobs, --scheduler) are
defined once in cli.py, and every command that takes them takes them the same way."""
import importlib
import pathlib

import pytest

import posenc_autograder
from posenc_autograder import cli
from posenc_autograder.course import CONFIG, COURSE_ENV, SOURCE_DIRECTORY

PACKAGE = pathlib.Path(posenc_autograder.__file__).parent
POSITIONALS = {"collect": ["downloads.zip", "positional_encoding"], "collect-exchange": ["positional_encoding"]}
SPELLED = {cli.COURSE: ["--course", "/c"], cli.DB_URL: ["--db-url", "sqlite:///x.db"], cli.JOBS: ["--jobs", "3"],
           cli.SCHEDULER: ["--scheduler", "tcp://h:8786"]}
PARSED = {cli.COURSE: "/c", cli.DB_URL: "sqlite:///x.db", cli.JOBS: 3, cli.SCHEDULER: "tcp://h:8786"}


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_each_command_takes_its_shared_options_as_spelled_once(name):
    module = importlib.import_module(f"posenc_autograder.{cli.COMMANDS[name].module}")
    parser = cli.parser_for(name, module)          # argparse refuses an option defined twice
    shared = cli.COMMANDS[name].shared
    argv = POSITIONALS.get(name, []) + [word for option in shared for word in SPELLED[option]]
    args = parser.parse_args(argv)
    assert {option: getattr(args, option) for option in shared} == {option: PARSED[option] for option in shared}
    assert callable(module.run_command)


def test_no_command_defines_a_shared_option_itself():
    flags = [flag for spelled in SPELLED.values() for flag in spelled if flag.startswith("--")]
    defining = sorted(f"{path.relative_to(PACKAGE)}: {flag}" for path in PACKAGE.rglob("*.py") if path.name != "cli.py"
                      for flag in flags if f'add_argument("{flag}"' in path.read_text())
    assert defining == []


def test_the_course_is_spelled_course_or_root_everywhere():
    for name, command in cli.COMMANDS.items():
        if cli.COURSE in command.shared:
            module = importlib.import_module(f"posenc_autograder.{command.module}")
            args = cli.parser_for(name, module).parse_args(POSITIONALS.get(name, []) + ["--root", "/r"])
            assert args.course == "/r", name


def test_collect_names_its_course_and_outside_one_says_why_without_a_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(COURSE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["collect", "downloads.zip", "positional_encoding"])
    assert str(stopped.value.code).startswith("error: no course folder at")
    course = tmp_path / "course"
    (course / CONFIG).parent.mkdir(parents=True)
    (course / CONFIG).write_text("")
    (course / SOURCE_DIRECTORY / "positional_encoding").mkdir(parents=True)
    assert cli.main(["collect", "downloads.zip", "no_such_assignment", "--course", str(course)]) == 2
    assert "unknown assignment 'no_such_assignment'; known: positional_encoding" in capsys.readouterr().err

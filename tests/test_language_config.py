"""The parts of language features that need no server: ``[language_servers.NAME]`` read
from the user file, and a rename's edits applied to a text."""

from __future__ import annotations

from pathlib import Path

from server.language.config import parse_table, read_definitions
from tooling.language import Position, Span, TextChange
from tools.rename import apply_changes


def test_a_table_names_its_files_by_language_or_extension() -> None:
    read = parse_table(
        {
            "ruff": {"command": "ruff", "args": ["server"], "languages": ["python"]},
            "taplo": {
                "command": "taplo",
                "args": ["lsp", "stdio"],
                "extensions": ["toml", ".TOML"],
            },
        },
        "config.toml",
    )
    assert read.warnings == ()
    ruff, taplo = read.specs
    assert (ruff.command, ruff.args, ruff.extensions) == ("ruff", ("server",), (".py", ".pyi"))
    assert taplo.extensions == (".toml",)
    assert ruff.handles(Path("a/b.py")) and not ruff.handles(Path("b.toml"))


def test_a_bad_table_is_one_warning_naming_it_and_the_others_stand() -> None:
    read = parse_table(
        {
            "nocommand": {"languages": ["python"]},
            "nofiles": {"command": "x"},
            "cobol": {"command": "x", "languages": ["cobol"]},
            "typo": {"command": "x", "extensions": [".x"], "argz": []},
            "good": {"command": "gopls", "languages": ["go"]},
        },
        "config.toml",
    )
    assert [spec.name for spec in read.specs] == ["good"]
    assert read.warnings == (
        "config.toml [language_servers.nocommand]: command must be a non-empty string; "
        "this server is not used",
        "config.toml [language_servers.nofiles]: say which files it answers for: "
        "languages = [...] or extensions = [...]; this server is not used",
        "config.toml [language_servers.cobol]: unknown language 'cobol' (use extensions = "
        "[...] for its files); this server is not used",
        "config.toml [language_servers.typo]: unknown key(s) argz; this server is not used",
    )


def test_the_user_file_is_read_and_an_absent_one_defines_none(tmp_path: Path) -> None:
    assert read_definitions(tmp_path / "absent.toml").specs == ()
    path = tmp_path / "config.toml"
    path.write_text(
        'model = "m"\n[language_servers.ruff]\ncommand = "ruff"\nextensions = [".py"]\n'
    )
    assert [spec.name for spec in read_definitions(path).specs] == ["ruff"]
    path.write_text("[language_servers\n")
    [warning] = read_definitions(path).warnings
    assert "no language servers read" in warning


def _change(line: int, start: int, end: int, text: str) -> TextChange:
    return TextChange(Span(Position(line, start), Position(line, end)), text)


def test_a_renames_edits_apply_last_first_in_characters() -> None:
    text = "def greet():\n    return 'é' + greet\n"
    changes = [
        _change(1, 5, 10, "welcome"),
        _change(2, 18, 23, "wel"),  # after a non-ASCII character: counted in characters
        _change(2, 23, 23, "come"),
    ]
    assert apply_changes(text, changes) == "def welcome():\n    return 'é' + welcome\n"

"""The language servers the user defined: ``[language_servers.NAME]`` in the user file.

::

    [language_servers.ruff]
    command = "ruff"
    args = ["server"]
    languages = ["python"]            # or extensions = [".py", ".pyi"]
    initialization_options = { lint = { select = ["F"] } }

Only the user's own configuration is read: a workspace's definitions of language servers
are untrusted data (a command a cloned repository chose), never read here. A bad table is
one warning naming it; the others stand.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tooling.regular_files import read_text_file

from ..config.user_config import MAX_CONFIG_BYTES, display_path

TABLE: Final = "language_servers"

# A language's files by extension (LSP's language identifiers), for ``languages``.
LANGUAGE_EXTENSIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "python": (".py", ".pyi"),
    "rust": (".rs",),
    "go": (".go",),
    "typescript": (".ts", ".mts", ".cts"),
    "typescriptreact": (".tsx",),
    "javascript": (".js", ".mjs", ".cjs"),
    "javascriptreact": (".jsx",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"),
    "java": (".java",),
    "lua": (".lua",),
    "ruby": (".rb",),
    "shellscript": (".sh", ".bash"),
    "toml": (".toml",),
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
}


@dataclass(frozen=True)
class LanguageServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()  # ".py": the files this server answers for
    initialization_options: Any = None
    env: Mapping[str, str] = field(default_factory=dict)

    def handles(self, path: Path) -> bool:
        return path.suffix.lower() in self.extensions


def language_id(path: Path) -> str:
    """LSP's language identifier of ``path`` (its extension without the dot otherwise)."""
    suffix = path.suffix.lower()
    for language, extensions in LANGUAGE_EXTENSIONS.items():
        if suffix in extensions:
            return language
    return suffix.lstrip(".") or "plaintext"


@dataclass(frozen=True)
class LanguageServerDefinitions:
    specs: tuple[LanguageServerSpec, ...] = ()
    warnings: tuple[str, ...] = ()


def read_definitions(path: Path | None) -> LanguageServerDefinitions:
    """The ``[language_servers.NAME]`` tables of the user file; an absent file defines none."""
    if path is None:
        return LanguageServerDefinitions()
    try:
        data = tomllib.loads(read_text_file(path, MAX_CONFIG_BYTES))
    except (FileNotFoundError, NotADirectoryError):
        return LanguageServerDefinitions()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return LanguageServerDefinitions(
            warnings=(f"{display_path(path)}: no language servers read: {exc}",)
        )
    return parse_table(data.get(TABLE), display_path(path))


def parse_table(raw: Any, where: str) -> LanguageServerDefinitions:
    if raw is None:
        return LanguageServerDefinitions()
    if not isinstance(raw, dict):
        return LanguageServerDefinitions(
            warnings=(f"{where}: {TABLE} must be tables [{TABLE}.NAME]",)
        )
    specs: list[LanguageServerSpec] = []
    warnings: list[str] = []
    for name, table in raw.items():
        try:
            specs.append(_spec(str(name), table))
        except ValueError as exc:
            warnings.append(f"{where} [{TABLE}.{name}]: {exc}; this server is not used")
    return LanguageServerDefinitions(tuple(specs), tuple(warnings))


def _spec(name: str, table: Any) -> LanguageServerSpec:
    if not isinstance(table, dict):
        raise ValueError("must be a table")
    unknown = sorted(
        set(table) - {"command", "args", "languages", "extensions", "initialization_options", "env"}
    )
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}")
    command = table.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError("command must be a non-empty string")
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("args must be a list of strings")
    extensions: list[str] = []
    languages = table.get("languages", [])
    if not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        raise ValueError("languages must be a list of strings")
    for language in languages:
        known = LANGUAGE_EXTENSIONS.get(language.lower())
        if known is None:
            raise ValueError(
                f"unknown language {language!r} (use extensions = [...] for its files)"
            )
        extensions.extend(known)
    raw_extensions = table.get("extensions", [])
    if not isinstance(raw_extensions, list) or not all(
        isinstance(x, str) and x.strip(".") for x in raw_extensions
    ):
        raise ValueError('extensions must be a list of file extensions like ".py"')
    extensions.extend("." + x.strip().lstrip(".").lower() for x in raw_extensions)
    if not extensions:
        raise ValueError("say which files it answers for: languages = [...] or extensions = [...]")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ValueError("env must be a table of strings")
    return LanguageServerSpec(
        name=name,
        command=command,
        args=tuple(args),
        extensions=tuple(dict.fromkeys(extensions)),
        initialization_options=table.get("initialization_options"),
        env={str(k): v for k, v in env.items()},
    )

"""What a command the agent runs must not see of agent-lsp itself: its files, its environment.

**Files.** The API key lives in the user configuration file or agent-lsp's own ``.env``;
conversations (prompts, tool output) and checkpoints live in the state folder.
:func:`hidden_paths` names them all, and the server hands them to the bash sandbox
(``SandboxPolicy.hidden_paths``), which lets no confined command read them.

**Environment.** A key given in the environment (``MODEL_API_KEY``: an editor client that
stores the key passes it that way) sits in the process's initial environment block, which the
kernel shows as ``/proc/PID/environ`` — and a Landlock-confined process of the same user may
still read that file of its parent (PTRACE_MODE_READ is not refused; only attaching is).
``unsetenv`` does not help: it drops the pointer, not the bytes. So
:func:`hide_from_proc_environ` overwrites the values in that block, after moving them to
the heap, where the process keeps using them (``/proc/PID/mem`` needs an attach, which the
sandbox refuses).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from .paths import state_dir
from .sources import KEY_NAMES, env_file_path
from .user_config import config_path, display_path

log = logging.getLogger(__name__)


def hidden_paths(
    environ: Mapping[str, str], *, state: Iterable[Path | None] = ()
) -> tuple[Path, ...]:
    """agent-lsp's own files no sandboxed command may read, for this environment.

    The user configuration folder and its file (named too: the file may be a symlink to
    elsewhere), the state folder, any other folder the server keeps state in (``state``:
    a ``--session-dir``), and agent-lsp's ``.env`` (or the ``AGENT_LSP_ENV_FILE`` file).
    Absolute, not resolved: the launcher resolves them per call.
    """
    paths: list[Path] = []
    user_file = config_path(environ)
    if user_file is not None:
        paths += [user_file.parent, user_file]
    paths.append(state_dir(environ))
    paths += [folder for folder in state if folder is not None]
    paths.append(env_file_path(environ))
    return tuple(dict.fromkeys(Path(os.path.abspath(path)) for path in paths))


def exposure_warning(folder: Path, paths: Iterable[Path]) -> str | None:
    """What to tell the user when a workspace folder holds some of ``paths`` (that exist).

    The sandbox cannot hide them there (a folder the agent may write is readable as a
    whole), and the file tools read the whole workspace anyway.
    """

    def within(path: str, other: str) -> bool:
        return path == other or path.startswith(other.rstrip("/") + "/")

    root = os.path.realpath(folder)
    real = {path: os.path.realpath(path) for path in paths if os.path.exists(path)}
    inside = [path for path in real if within(real[path], root)]
    # A file in a folder already named need not be named again.
    inside = [p for p in inside if not any(o != p and within(real[p], real[o]) for o in inside)]
    if not inside:
        return None
    names = ", ".join(display_path(path) for path in inside)
    return (
        f"The workspace folder {display_path(folder)} holds agent-lsp's own files ({names}): "
        "the agent can read them there, your API key and saved conversations included, "
        "with every tool. Open a narrower folder, or keep the key elsewhere."
    )


def take_key_from_environment(names: Collection[str] = KEY_NAMES) -> dict[str, str]:
    """For the server: the environment as it was (pass it on as the engine's), with the key
    variables then removed from ``os.environ`` (no child inherits them) and overwritten in
    ``/proc/self/environ``."""
    snapshot = dict(os.environ)
    hide_from_proc_environ(names)
    for name in names:
        os.environ.pop(name, None)
    return snapshot


def hide_from_proc_environ(names: Collection[str] = KEY_NAMES) -> bool:
    """Overwrite the values of ``names`` in this process's initial environment block.

    They stay in ``os.environ`` (and the C environment: children still inherit them).
    Returns whether the block holds none of them now; Linux only (elsewhere: False).
    """
    present = [name for name in names if name in os.environ]
    if not present:
        return True
    if not sys.platform.startswith("linux"):
        return False
    for name in present:
        # setenv copies "NAME=value" to the heap and points the environment at the copy:
        # the bytes in the initial block are then referenced by nobody.
        os.environ[name] = os.environ[name]
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50, 51)
        with open("/proc/self/environ", "rb") as shown:
            block = shown.read()
    except (OSError, IndexError, ValueError) as exc:
        log.warning("could not hide the API key from /proc/self/environ: %s", exc)
        return False
    import ctypes

    # The file is the memory [env_start, env_end): check before writing a byte.
    if end - start != len(block) or ctypes.string_at(start, len(block)) != block:
        log.warning("could not hide the API key from /proc/self/environ: unexpected layout")
        return False
    prefixes = tuple(f"{name}=".encode() for name in present)
    offset = 0
    for entry in block.split(b"\0"):
        if entry.startswith(prefixes):
            value_at = entry.index(b"=") + 1
            ctypes.memset(start + offset + value_at, 0, len(entry) - value_at)
        offset += len(entry) + 1
    return True


def ancestors_holding(names: Collection[str] = KEY_NAMES) -> list[tuple[int, str]]:
    """The ancestors of this process (pid, command name) whose environment holds a
    non-empty value of one of ``names``: ``/proc/PID/environ`` of each, up to init.

    Where the sandbox has no PID namespace (the no-namespaces fallback), a confined command
    can read those files, as this function does: a wrapper that started the server (``uv
    run``, a shell that exported the key) keeps the key there, out of the server's reach.
    """
    found: list[tuple[int, str]] = []
    prefixes = tuple(f"{name}=".encode() for name in names)
    pid, seen = os.getppid(), set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                head, _, rest = stat.read().rpartition(b")")
            comm = head.partition(b"(")[2].decode(errors="replace")
            parent = int(rest.split()[1])
        except (OSError, IndexError, ValueError):
            break
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                block = environ.read()
        except OSError:
            block = b""  # another user's (sudo), or gone: not readable by a command either
        if any(
            entry.startswith(prefixes) and entry.partition(b"=")[2] for entry in block.split(b"\0")
        ):
            found.append((pid, comm))
        pid = parent
    return found

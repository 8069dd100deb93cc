"""git run by the server itself on workspace content (glob's listing, the environment's
status), confined as a sandboxed bash call is.

The workspace is the agent's to write: a repository in it (nested, planted with
``write_file``, the root turned into one, a ``.git/commondir`` to a planted folder, a
submodule's config) can name programs git starts (``core.fsmonitor``, filters, hooks).
So every such git runs inside the bash sandbox (``tools.sandbox``): **read-only**, no
network, a private ``/tmp`` and ``$TMPDIR``, agent-lsp's own files hidden, its processes
ended with it; what a filter or fsmonitor does there is no worse than a sandboxed bash
call. Its command line is hardened as a second layer (:data:`HARDENING`: no fsmonitor,
no hooks, no untracked cache write; no system or global config, no pager, no prompt,
no optional locks, no inherited ``GIT_*`` variable).

With the sandbox ``off`` (the user's choice) git runs hardened but unconfined, as a bash
call then runs. With no confinement on this system at all (neither namespaces nor
Landlock), :func:`GitRunner.usable` is False and callers do without git (glob walks, the
environment block says the status was skipped). ``git`` itself is found by
``tools.programs`` outside every folder the agent may write.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import programs, sandbox
from .sandbox import Confinement, SandboxPolicy

# Given before every command: what the repository's own config cannot turn back on.
HARDENING = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.sshCommand=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "diff.external=",
)
# Confined only: in the sandbox's user namespace the files may show another owner than
# git's uid (unconfined, git's own check of a repository's owner stays in force).
CONFINED_ONLY = ("-c", "safe.directory=*")


class GitTimeout(Exception):
    """git did not answer before the deadline (it has been killed, with all it started)."""


@dataclass(frozen=True)
class GitRunner:
    """How the server runs git on one workspace's content."""

    workspace_root: Path
    policy: SandboxPolicy
    git: str | None

    @classmethod
    def of(cls, workspace_root: Path, policy: SandboxPolicy, git: str | None = None) -> GitRunner:
        """``git``: that program (tests); otherwise found by ``tools.programs``, outside
        the workspace and the writable roots."""
        if git is None:
            git = programs.git((workspace_root, *policy.writable_roots))
        if git is not None:
            _excludes_file(git)  # read now (the caller's thread), not in a call
        return cls(workspace_root, policy, git)

    @property
    def confined(self) -> bool:
        return self.policy.mode != "off"

    def unusable(self) -> str | None:
        """Why git is not run at all ("" or None: it is)."""
        if self.git is None:
            return "git is not installed"
        if self.confined and not sandbox.support().available:
            return "no sandbox on this system to run it in"
        return None

    # -- one call ------------------------------------------------------------------

    def _command(
        self, folder: Path, args: Sequence[str], tmp: Path
    ) -> tuple[sandbox.Launch | None, list[str], dict[str, str]]:
        """The spawn for a thread (:meth:`run_sync`): through the sandbox's launcher
        (``Confinement.launch_sync``), which sets the seccomp filter and the limits itself."""
        argv, env, confinement = self._plain(folder, args, tmp)
        if confinement is None:
            return None, argv, env
        launch = confinement.launch_sync(argv)
        return launch, launch.argv, env

    def _launch(
        self, folder: Path, args: Sequence[str], tmp: Path
    ) -> tuple[sandbox.Launch | None, list[str], dict[str, str]]:
        """The spawn for the event loop (:meth:`run`): bubblewrap running git itself where
        it can (no interpreter inside: ~20 ms rather than ~40 ms a call), as bash is run."""
        argv, env, confinement = self._plain(folder, args, tmp)
        if confinement is None:
            return None, argv, env
        launch = confinement.launch(argv)
        return launch, launch.argv, env

    def _plain(
        self, folder: Path, args: Sequence[str], tmp: Path
    ) -> tuple[list[str], dict[str, str], Confinement | None]:
        assert self.git is not None
        argv = [self.git, *HARDENING, *_excludes_file(self.git)]
        env = _environment(tmp)
        if not self.confined:
            return [*argv, "-C", str(folder), *args], env, None
        argv += [*CONFINED_ONLY, "-C", str(folder), *args]
        return argv, env, self._confinement(folder, tmp)

    def _confinement(self, folder: Path, tmp: Path) -> Confinement:
        read_only = dataclasses.replace(
            self.policy, mode="read-only", network=False, allowed_domains=()
        )
        found = sandbox.confinement(read_only, self.workspace_root, tmp)
        assert found is not None  # usable() said a sandbox is available
        # The repository may begin above the workspace (a folder of a larger one).
        top = _repository_top(folder)
        assert self.git is not None
        # git's own folder stays visible under the private /tmp (a test's git is there).
        readable = (*found.readable, *([top] if top is not None else []), Path(self.git).parent)
        return dataclasses.replace(found, readable=tuple(dict.fromkeys(readable)))

    async def run(
        self, folder: Path, *args: str, deadline: float
    ) -> tuple[int, bytes, bytes] | None:
        """``git -C folder ARGS`` (exit code, stdout, stderr), or None when git cannot be
        run; raises :class:`GitTimeout` at ``deadline`` (``time.monotonic()``)."""
        if self.unusable():
            return None
        async with sandbox.private_tmp() as tmp:
            launch, argv, env = self._launch(folder, args, tmp)
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=folder,
                    stdin=launch.stdin if launch is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    start_new_session=True,  # its own group: a kill reaches all it started
                    pass_fds=launch.pass_fds if launch is not None else (),
                )
            except OSError:
                if launch is not None:
                    launch.abandon()
                return None
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    if launch is not None:
                        launch.close()  # the child holds its own copies now
                        await launch.join()  # its limits, before git starts
                        if launch.failure:
                            await _kill(proc)
                            return None
                    out, err = await proc.communicate()
            except TimeoutError:
                await _kill(proc)
                raise GitTimeout from None
            except BaseException:  # cancellation: never leave git running
                await asyncio.shield(_kill(proc))
                raise
            finally:
                if launch is not None:
                    launch.abandon()
        assert proc.returncode is not None
        if self.confined and sandbox.is_launch_failure(
            proc.returncode, err.decode(errors="replace")
        ):
            return None
        return proc.returncode, out, err

    def run_sync(self, folder: Path, *args: str, timeout: float) -> tuple[int, bytes, bytes] | None:
        """:meth:`run` for a thread: raises :class:`GitTimeout` after ``timeout`` s."""
        if self.unusable():
            return None
        with _sync_tmp() as tmp:
            launch, argv, env = self._command(folder, args, tmp)
            # Held until git has ended: closing its end of the gate's pipe ends the sandbox.
            with launch if launch is not None else contextlib.nullcontext():
                try:
                    proc = subprocess.Popen(
                        argv,
                        cwd=folder,
                        stdin=launch.stdin if launch is not None else subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        env=env,
                        start_new_session=True,
                    )
                except OSError:
                    return None
                if launch is not None:
                    launch.close()  # the child holds its own copy of the gate's end
                try:
                    out, err = proc.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.communicate(timeout=1.0)
                    raise GitTimeout from None
                except BaseException:
                    _kill_group(proc.pid)
                    raise
        if self.confined and sandbox.is_launch_failure(
            proc.returncode, err.decode(errors="replace")
        ):
            return None
        return proc.returncode, out, err


def _environment(tmp: Path) -> dict[str, str]:
    """Only what git needs: nothing inherited points it at another repository or config
    (``GIT_DIR``, ``GIT_CONFIG_*``, a hook's environment), no pager, no prompt."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/"),
        "TMPDIR": str(tmp),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_ASKPASS": "false",
        "SSH_ASKPASS": "false",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    if xdg := os.environ.get("XDG_CONFIG_HOME"):
        env["XDG_CONFIG_HOME"] = xdg  # where git's default global excludes file is
    return env


@functools.cache
def _excludes_file(git: str) -> tuple[str, ...]:
    """The user's own ``core.excludesFile`` (their global config is not read, so it is
    given on the command line): ``("-c", "core.excludesFile=PATH")`` or nothing. Read once
    with ``git config --global --get``, which runs nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        proc = subprocess.Popen(
            [git, "config", "--global", "--path", "--get", "core.excludesFile"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd="/",
            start_new_session=True,
        )
    except OSError:
        return ()
    try:
        out, _ = proc.communicate(timeout=0.5)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
        return ()
    value = out.decode(errors="replace").strip()
    return ("-c", f"core.excludesFile={value}") if proc.returncode == 0 and value else ()


def _repository_top(folder: Path) -> Path | None:
    """The folder holding the nearest ``.git`` at or above ``folder``."""
    for here in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            if os.path.lexists(here / ".git"):
                return here
    return None


@contextlib.contextmanager
def _sync_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="agent-lsp-git-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def _kill(proc: asyncio.subprocess.Process) -> None:
    _kill_group(proc.pid)
    # wait() also waits for the pipes to close: bounded, in case something that left the
    # group holds them (git itself is dead by now).
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1.0):
            await proc.wait()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)

"""The ``bash`` tool: run one shell command in the workspace, bounded in time and output.

Policies (the parts a caller can observe):

- **Process tree.** ``bash -c COMMAND`` runs with cwd = workspace root, stdin from
  ``/dev/null`` (it must never read the editor's protocol stream) and stdout+stderr
  merged into one pipe, in its own session, so its process group holds everything it
  starts. The call owns that group for exactly its own duration: when the shell exits,
  the pipe gets a short grace (``DRAIN_GRACE``) to deliver what leftovers already wrote,
  then whatever is still running in the group is stopped (SIGTERM, then SIGKILL after
  ``TERM_GRACE``). So ``sleep 100 &`` neither holds the call nor outlives it; a command
  that needs a background server must use it and stop it within the same command. The
  same group kill runs on timeout and when the awaiting task is cancelled (then
  ``CancelledError`` is re-raised); either way the call returns at most
  ``TERM_GRACE + SETTLE_TIMEOUT`` (0.8 s) after its deadline or cancel. A process that
  leaves the group on purpose (``setsid``, daemons) escapes: this is a process-lifetime
  rule, not a sandbox.
- **Exit status.** A non-zero exit is a failure by the tool contract, so the result
  starts with ``Error: exit code N`` followed by the output, and a client marks the call
  failed (a shell killed by a signal reports the signal). Exit 0 returns the bare output.
  A timeout returns ``Error: command timed out after N s`` plus the output so far.
- **Output.** Read as it arrives into a head and a tail buffer, so memory is O(cap)
  however much the command prints; at most ``OUTPUT_LIMIT`` characters are kept (the
  first and last half) with a marker saying how many bytes were dropped between them.
  Bytes are decoded as UTF-8 with replacement; no output at all gives ``(no output)``.
- **Environment.** The child gets ``os.environ`` minus the ``hidden_env`` names (exact,
  case-sensitive match), so the agent cannot print the model credentials, and
  ``TMPDIR``/``TMP``/``TEMP`` pointing at a private temp dir of the call, removed after it.
  A confined call's per-user caches it may not write (``XDG_CACHE_HOME``, uv, pip, npm)
  point into that temp dir too (``tools/sandbox/caches.py``).
- **Sandbox.** Unless the policy is ``off`` (or the kernel has no Landlock), the command
  runs confined (``tools/sandbox/confine.py``): it writes only in the workspace, the
  ``writableRoots`` and its temp dir, reads none of the policy's ``hidden_paths``
  (agent-lsp's own key files and state), and opens no TCP connection. A failure that looks
  like the sandbox refusing gets a note saying so, and a change to ``.git/config`` or
  ``.git/hooks`` gets a note too (git obeys them later, outside the sandbox).

Exit is observed through ``SubprocessProtocol.process_exited`` (``loop.subprocess_exec``,
the public API ``asyncio.create_subprocess_exec`` wraps) rather than ``Process.wait()``:
CPython resolves ``wait()`` only once every pipe is closed, so a background child holding
stdout would keep it blocked until the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Iterable
from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition, is_error
from tooling.permissions import CallPermission
from tooling.workspace import Workspace

from . import sandbox
from .diagnostics import open_files_after, open_files_before
from .sandbox import (
    CGROUPS,
    PROXY_PORT,
    WARM,
    CallGroup,
    Confinement,
    DomainProxy,
    SandboxPolicy,
    Waiter,
    cache_redirects,
    git_guard,
    hit,
    proxy_environment,
)

DEFAULT_SECRET_ENV: tuple[str, ...] = ("MODEL_API_KEY", "OPENAI_API_KEY")

# Characters of output kept per call (first half + last half of the stream).
OUTPUT_LIMIT = 50_000
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_TIMEOUT: float = 600
# After the shell exits: how long background leftovers may keep the pipe open.
DRAIN_GRACE = 0.25
# Between SIGTERM and SIGKILL to the process group.
TERM_GRACE = 0.4
# After the kill: bound on waiting for the exit status and pipe EOF (a process that
# escaped the group may hold the pipe forever).
SETTLE_TIMEOUT = 0.4
_POLL_INTERVAL = 0.025

# Cleanups that outlived a second cancellation of their caller; kept referenced so
# they are not garbage-collected before finishing.
_background_cleanups: set[asyncio.Task[None]] = set()


def bash_tool(
    workspace: Workspace,
    *,
    default_timeout: float | None = None,
    max_timeout: float = DEFAULT_MAX_TIMEOUT,
    hidden_env: Iterable[str] = DEFAULT_SECRET_ENV,
    policy: SandboxPolicy | None = None,
    diagnostics_wait: float = 0.0,
) -> ToolDefinition:
    """The ``bash`` tool bound to ``workspace`` (``default_timeout=None`` means 120 s).

    ``policy`` is the sandbox's (default: ``workspace-write``, no network).
    ``diagnostics_wait``: how long (s) the result waits for a language server's problems
    in the editor's open files the command changed (0: it does not look).
    """
    timeout = DEFAULT_TIMEOUT if default_timeout is None else float(default_timeout)
    if max_timeout <= 0:
        raise ValueError(f"max_timeout must be positive, got {max_timeout}")
    if not 0 < timeout <= max_timeout:
        raise ValueError(f"default_timeout must be in (0, {max_timeout:g}], got {timeout:g}")
    hidden = frozenset(hidden_env)
    policy = policy or SandboxPolicy()
    confined = policy.mode != "off" and sandbox.support().available

    def permission(arguments: dict[str, Any]) -> CallPermission:
        return sandbox.call_permission(
            policy,
            arguments["command"],
            arguments.get("escalation"),
            arguments.get("justification"),
            arguments.get("network_hosts") or (),
        )

    last_git: list[git_guard.Fingerprint] = []  # the previous call's, for the next one
    # Whether a call already said the working tree is too large to check in full.
    said_partial: list[bool] = [False]

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        # Types and bounds are already checked by the runtime against the schema, and an
        # escalation was granted by the user before the runtime called this handler.
        root = workspace.root
        # In a thread: a discovery lists folders (a few ms, tens in a huge tree); the last
        # call's fingerprint makes it list only folders changed since (their ctime).
        git_before = await asyncio.to_thread(
            git_guard.fingerprint, root, since=last_git[0] if last_git else None
        )
        open_before = await open_files_before(context, workspace, diagnostics_wait)
        async with sandbox.private_tmp() as tmp, contextlib.AsyncExitStack() as stack:
            confinement = _confinement(policy, root, tmp, arguments, git_before.found)
            refused: list[str] = []
            group = None
            warm = None
            form = None
            if confinement is not None:
                if confinement.network == "proxy":
                    proxy = DomainProxy(confinement.proxy_socket, confinement.allowed_hosts)
                    refused = (await stack.enter_async_context(proxy)).refused
                # Made ahead: a waiting process already in the call's cgroups, or the
                # cgroups alone; removed, and the next ones made, after the call.
                form = confinement.warm_form()
                group = CGROUPS.take(confinement.limits, form)
                warm = WARM.claim(group, form, confinement.limits)
            try:
                result = await run_command(
                    root,
                    arguments["command"],
                    time_limit=float(arguments.get("timeout_seconds", timeout)),
                    hidden_env=hidden,
                    tmp=tmp,
                    confinement=confinement,
                    group=group,
                    warm=warm,
                )
                limit_hits = group.hits() if group is not None else frozenset()
            finally:
                if warm is not None and not warm.adopted:
                    warm.discard()  # claimed, never handed the call: whatever raised, it ends
                if confinement is not None:
                    CGROUPS.give_back(group, confinement.limits)
                    WARM.prepare(form, confinement.limits)
        notes = []
        if confinement is not None and (is_error(result) or refused or limit_hits):
            notes.append(hit(confinement.limits, result, limit_hits))
            notes.append(sandbox.explain_denial(result, confinement, refused))
        git_after = await asyncio.to_thread(git_guard.fingerprint, root, since=git_before)
        last_git[:] = [git_after]
        notes.append(git_guard.change_note(git_before, git_after))
        # Fails closed: what the watch could not read is said (see coverage_note).
        notes.append(git_guard.coverage_note(git_after, again=not said_partial[0]))
        said_partial[0] = git_after.truncated
        notes.append(
            (await open_files_after(context, workspace, open_before, diagnostics_wait)).lstrip("\n")
        )
        return "\n".join([result.rstrip("\n"), *filter(None, notes)]) if any(notes) else result

    return ToolDefinition(
        name="bash",
        description=(
            "Run a shell command with `bash -c` in the workspace folder and return its "
            "combined stdout and stderr. There is no terminal and stdin is empty, so "
            "interactive programs see end-of-file. The command is stopped after "
            f"timeout_seconds (default {timeout:g}, max {max_timeout:g}); processes it "
            "leaves running in the background are stopped when it returns. Long output "
            f"keeps the first and last {OUTPUT_LIMIT // 2:,} characters. A non-zero exit "
            "status is reported as an error together with the output. "
            + (
                "When it changes files open in the editor, the result ends with the "
                "problems a language server reports that the change introduced. "
                if diagnostics_wait > 0
                else ""
            )
            + sandbox.prompt_text(policy, confined)
        ),
        parameters={
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The bash command line to run.",
                },
                "timeout_seconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": max_timeout,
                    "description": f"Time limit in seconds (default {timeout:g}).",
                },
                "escalation": {
                    "type": "string",
                    "enum": ["network", "git-config", "unsandboxed"],
                    "description": (
                        "Only when the sandbox refused something this task truly needs: "
                        "ask the user to run this one call with network access (all of "
                        "it, or only network_hosts), with git's configuration and hooks "
                        "writable, or without the sandbox. Requires a justification; the "
                        "user may decline."
                    ),
                },
                "network_hosts": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 253},
                    "minItems": 1,
                    "maxItems": 20,
                    "description": (
                        'With escalation "network": only these hosts (e.g. "pypi.org", '
                        '"*.githubusercontent.com"), reached through a proxy set in '
                        "HTTP_PROXY/HTTPS_PROXY/ALL_PROXY; preferred over all network."
                    ),
                },
                "justification": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 300,
                    "description": "One line telling the user why this call needs the escalation.",
                },
            },
            "required": ["command"],
            "dependentRequired": {
                "escalation": ["justification"],
                "network_hosts": ["escalation"],
            },
            "additionalProperties": False,
        },
        handler=handler,
        permission=permission,
        read_only=False,
        destructive=True,
        title="Run shell command",
        summary_key="command",
        kind="execute",
        compaction_keeps="commands run and their results",
        annotations={
            "openWorldHint": not confined or policy.network,
            "sandbox": sandbox.describe(policy, workspace.root),
        },
    )


async def run_command(
    cwd: Path,
    command: str,
    *,
    time_limit: float,
    hidden_env: frozenset[str] = frozenset(),
    tmp: Path | None = None,
    confinement: Confinement | None = None,
    group: CallGroup | None = None,
    warm: Waiter | None = None,
) -> str:
    """Run ``bash -c command`` under the module's policies and return the result text.

    ``tmp`` becomes the command's ``TMPDIR``; ``confinement`` (if any) is applied before
    ``bash`` starts (by bubblewrap, or the sandbox launcher), in ``group`` (the call's
    cgroups, if any); ``warm``: a waiter started ahead, in ``group`` already
    (``tools/sandbox/warm.py``), which runs the call if it still can.
    """
    missing = _missing_workspace(cwd)
    if missing:
        if warm is not None:
            warm.discard()
        return missing
    env = {name: value for name, value in os.environ.items() if name not in hidden_env}
    if tmp is not None:
        env.update(TMPDIR=str(tmp), TMP=str(tmp), TEMP=str(tmp))
    argv = ["bash", "-c", command]
    launch = None
    if confinement is not None:
        # The launcher starts, and bash is looked up after it: say here if there is none.
        if shutil.which("bash", path=env.get("PATH", os.defpath)) is None:
            if warm is not None:
                warm.discard()
            return "Error: could not start bash: no bash found on PATH"
        # Per-user caches it may not write point into its temp dir instead.
        env.update(cache_redirects(env, confinement, cwd))
        if confinement.network == "proxy":
            env.update(proxy_environment(PROXY_PORT))
    output = BoundedOutput(OUTPUT_LIMIT)
    loop = asyncio.get_running_loop()
    started = loop.time()  # the call's time limit counts from here, the sandbox's set-up included
    if confinement is not None and warm is not None:
        try:
            message = confinement.warm_message(argv, env, cwd)
        except BaseException:
            warm.discard()
            raise
        if warm.start(message):
            # Nothing awaited since it was handed the call: no cancel can fall in between.
            transport, protocol = _WarmTransport.adopt(warm, output)
            return await _run_started(transport, protocol, output, confinement, None, time_limit,
                                      started)  # fmt: skip
        warm.discard()  # it runs nothing: the call spawns cold, in the same cgroups
    if confinement is not None:
        launch = confinement.launch(argv, group=group)
        argv = launch.argv

    # Shielded so that a cancel arriving mid-spawn still lets us learn the pid and kill
    # the whole group (asyncio's own cleanup would kill only the shell).
    spawn = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: _ShellProtocol(output),
            *argv,
            cwd=cwd,
            env=env,
            stdin=launch.stdin if launch else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=launch.pass_fds if launch else (),
        )
    )
    if launch is not None:
        # Once spawned (even after a cancel), the child holds its own copy of the seccomp
        # filter's descriptor: never before, or the number could be reused meanwhile.
        spawn.add_done_callback(lambda _: launch.close())
    try:
        cold, protocol = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        if launch is not None:
            launch.abandon()  # bubblewrap, if it started, goes on: its group is killed
        await _finish_despite_cancel(_abandon(spawn))
        raise
    except OSError as exc:
        if launch is not None:
            launch.abandon()
        return _missing_workspace(cwd) or f"Error: could not start bash: {exc}"

    return await _run_started(cold, protocol, output, confinement, launch, time_limit, started)


async def _run_started(
    transport: asyncio.SubprocessTransport | _WarmTransport,
    protocol: _ShellProtocol,
    output: BoundedOutput,
    confinement: Confinement | None,
    launch: sandbox.Launch | None,
    time_limit: float,
    started: float,
) -> str:
    """The call from its spawn on: its limits (a cold launch), its exit or time limit, the
    end of its processes, the result text."""
    loop = asyncio.get_running_loop()
    try:
        if launch is not None:
            # Its limits and cgroups, before the command starts; bounded by the call's time
            # (a bubblewrap that never says its sandbox's PID must not hold the call).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(launch.join(), time_limit)
        left = max(0.0, time_limit - (loop.time() - started))
        exited = await _wait_event(protocol.exited, left)
        # bubblewrap exits after its PID namespace is empty (its PID 1 ended, and the kernel
        # killed and reaped the rest): no process of the call is left to look for.
        emptied = exited and confinement is not None and confinement.namespaces is not None
        await _settle(transport, protocol, drain=exited, group_gone=emptied)
    except asyncio.CancelledError:
        await _finish_despite_cancel(_settle(transport, protocol, drain=False))
        raise
    finally:
        if launch is not None:
            launch.abandon()

    text = output.render()
    if launch is not None and launch.failure:
        return (
            f"Error: the sandbox could not be applied, so the command did not run: {launch.failure}"
        )
    if not exited:
        return f"Error: command timed out after {time_limit:g} s\n{text}"
    code = transport.get_returncode()
    if code is None or code == 0:
        return text
    if confinement is not None and sandbox.is_launch_failure(code, text):
        return f"Error: the sandbox could not be applied, so the command did not run: {text}"
    if 128 < code <= 128 + 64 and confinement is not None and confinement.namespaces is not None:
        # bubblewrap reports a command killed by signal N as exit status 128 + N.
        code = 128 - code
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Error: killed by {name} (exit code {code})\n{text}"
    return f"Error: exit code {code}\n{text}"


def _confinement(
    policy: SandboxPolicy,
    root: Path,
    tmp: Path,
    arguments: dict[str, Any],
    found: git_guard.GitDirs | None = None,
) -> Confinement | None:
    """The confinement an allowed call runs under (its escalation granted)."""
    escalation = arguments.get("escalation")
    if escalation == "unsandboxed":
        return None
    hosts = tuple(arguments.get("network_hosts") or ())
    namespaces = sandbox.support().namespaces
    by_proxy = bool(hosts) and namespaces is not None and namespaces.net
    return sandbox.confinement(
        policy,
        root,
        tmp,
        network=True if escalation == "network" and not by_proxy else None,
        hosts=hosts if escalation == "network" else (),
        git_writable=escalation == "git-config",
        found=found,
    )


def _missing_workspace(cwd: Path) -> str | None:
    # One stat: cheap enough for the event loop (the spawn itself costs far more).
    try:
        if cwd.is_dir():
            return None
    except OSError as exc:  # e.g. a parent folder the server may no longer enter
        return f"Error: cannot use the workspace folder {cwd}: {exc.strerror or exc}"
    return f"Error: workspace folder no longer exists: {cwd}"


class BoundedOutput:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts the rest.

    Bytes bound characters from above (UTF-8 decoding never yields more characters
    than bytes), so the rendered text stays within ``limit`` characters plus marker.
    """

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            # Trim only when twice the limit: amortised O(1) per byte, memory O(limit).
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: -self._tail_limit]

    def render(self) -> str:
        head = bytes(self._head)
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        if len(head) + len(tail) == self.total:
            text = (head + tail).decode("utf-8", errors="replace")
            return text if text else "(no output)"
        # Cut at character boundaries so the edges do not decode to replacement marks.
        head = _drop_partial_char_at_end(head)
        tail = _drop_partial_char_at_start(tail)
        dropped = self.total - len(head) - len(tail)
        return (
            head.decode("utf-8", errors="replace")
            + f"\n\n[... {dropped:,} bytes of output omitted ...]\n\n"
            + tail.decode("utf-8", errors="replace")
        )


def _drop_partial_char_at_end(data: bytes) -> bytes:
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for the lead byte
            continue
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if needed > back:
                return data[:-back]
        break
    return data


def _drop_partial_char_at_start(data: bytes) -> bytes:
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]


class _ShellProtocol(asyncio.SubprocessProtocol):
    def __init__(self, output: BoundedOutput) -> None:
        self._output = output
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self._output.feed(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


class _WarmTransport:
    """A waiter's process (``tools/sandbox/warm.py``) seen as ``loop.subprocess_exec``'s
    transport is: its output pipe read on the event loop, its exit seen on a pidfd (and
    reaped: the server is its parent), ``close`` killing it if it still runs."""

    def __init__(self, waiter: Waiter, protocol: _ShellProtocol) -> None:
        self._waiter = waiter
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()
        self._returncode: int | None = None

    @classmethod
    def adopt(cls, waiter: Waiter, output: BoundedOutput) -> tuple[_WarmTransport, _ShellProtocol]:
        protocol = _ShellProtocol(output)
        transport = cls(waiter, protocol)
        os.set_blocking(waiter.output, False)
        transport._loop.add_reader(waiter.output, transport._readable)
        transport._loop.add_reader(waiter.pidfd, transport._exited)
        waiter.adopted = True  # its process is the call's now: ended by the call's end
        return transport, protocol

    def _readable(self) -> None:
        try:
            data = os.read(self._waiter.output, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._protocol.pipe_data_received(1, data)
            return
        self._close_output()
        self._protocol.pipe_connection_lost(1, None)

    def _close_output(self) -> None:
        if self._waiter.output >= 0:
            self._loop.remove_reader(self._waiter.output)
            os.close(self._waiter.output)
            self._waiter.output = -1

    def _exited(self) -> None:
        try:
            pid, status = os.waitpid(self._waiter.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self._waiter.pid, 255 << 8  # reaped elsewhere: status unknown
        if pid == 0:
            return
        self._returncode = os.waitstatus_to_exitcode(status)
        self._loop.remove_reader(self._waiter.pidfd)
        os.close(self._waiter.pidfd)
        self._waiter.pidfd = -1
        self._protocol.process_exited()

    def get_pid(self) -> int:
        return self._waiter.pid

    def get_returncode(self) -> int | None:
        return self._returncode

    def close(self) -> None:
        """As asyncio's: the pipe closed, the process killed if it still runs (it is reaped
        when it exits: the pidfd stays watched until then)."""
        if self._waiter.output >= 0 and not self._loop.is_closed():
            self._close_output()
        if self._waiter.life >= 0:  # the gate's watcher ends what is left of the sandbox
            with contextlib.suppress(OSError):
                os.close(self._waiter.life)
            self._waiter.life = -1
        if self._returncode is None:
            with contextlib.suppress(OSError):
                os.kill(self._waiter.pid, signal.SIGKILL)


async def _settle(
    transport: asyncio.SubprocessTransport | _WarmTransport,
    protocol: _ShellProtocol,
    *,
    drain: bool,
    group_gone: bool = False,
) -> None:
    """End the call: let the pipe drain briefly, stop the group (unless ``group_gone``:
    known to be empty), release the transport."""
    try:
        if drain:
            await _wait_event(protocol.output_closed, DRAIN_GRACE)
        if not group_gone:
            await _terminate_group(transport.get_pid())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_TIMEOUT
        for event in (protocol.exited, protocol.output_closed):
            await _wait_event(event, max(0.0, deadline - loop.time()))
    finally:
        transport.close()


async def _abandon(spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, Any]]) -> None:
    try:
        transport, protocol = await spawn
    except Exception:
        return  # nothing started (or asyncio already cleaned up its half-started shell)
    await _settle(transport, protocol, drain=False)


async def _terminate_group(pgid: int) -> None:
    """SIGTERM the process group, then SIGKILL whatever is still running after a grace."""
    # Only zombies left (bubblewrap's, being reaped; a sandbox's processes as its namespace
    # ends) is the usual case after a command: no signal, no wait.
    if not _group_running(pgid) or not _signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TERM_GRACE
    interval = 0.002  # most groups are gone within milliseconds of the signal
    while loop.time() < deadline:
        await asyncio.sleep(interval)
        if not _group_running(pgid):
            return
        interval = min(interval * 2, _POLL_INTERVAL)
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_running(pgid: int) -> bool:
    """Whether any non-zombie process is left in the group.

    ``killpg(pgid, 0)`` also counts zombies, and orphans stay zombies for good under
    an init that does not reap (common in containers), so consult ``/proc`` when it
    exists instead of waiting out the grace for processes that are already dead.
    """
    if not _signal_group(pgid, 0):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


async def _wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to ``seconds``; whether the event is set."""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def _finish_despite_cancel(cleanup: Awaitable[None]) -> None:
    """Run ``cleanup`` to the end even if the caller is cancelled again meanwhile."""
    task = asyncio.ensure_future(cleanup)
    _background_cleanups.add(task)
    task.add_done_callback(_background_cleanups.discard)
    await asyncio.shield(task)

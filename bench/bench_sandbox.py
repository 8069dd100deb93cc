"""Cost of the bash sandbox per call, each form next to the same call unsandboxed.

Every variant goes through the real ``bash`` tool (``runtime.execute``: schema check, git
fingerprint before and after, private temp dir, spawn, output, clean-up); what differs is
the confinement:

- ``off``: bash directly (``sandbox: off``, the baseline);
- ``full``: bubblewrap alone (own user, PID, IPC, UTS, network namespace; read-only root,
  private read-only ``/tmp``, agent-lsp's files covered, what git obeys read-only; seccomp
  on a descriptor; limits set before exec), in the call's cgroups, started by a waiter
  already in them (``tools/sandbox/warm.py``): what a call runs now;
- ``full-cold``: the same spawned by the server, moved into the call's cgroups while
  bubblewrap builds its mounts (``--info-fd``/``--block-fd``): the form before the waiter;
- ``full-nocgroup``: cold, without cgroups (a server that may make none: most users);
- ``launcher``: bubblewrap around the Python launcher (Landlock, seccomp, limits inside),
  what every call ran before issue 37 and what the proxy's calls still run;
- ``fallback``: no namespaces (``AGENT_LSP_BWRAP=none``): the launcher's work (Landlock,
  seccomp, the limits, supervising the call's processes) done by a waiter that has it
  imported, in the call's cgroups already;
- ``fallback-cold``: the same through a launcher started per call (an interpreter start),
  which joins the cgroups itself: the fallback before the waiter.

The ``SandboxSupport`` and confinement of each variant are swapped in per call (the tool
looks them up per call). Rounds alternate the variants, rotating their order; medians.

Run: ``uv run python bench/bench_sandbox.py [--rounds 40]`` (writes
``bench/results/sandbox.md``). Targets (issue 37): +10 ms with namespaces, +25 ms without.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from server.config.own_secrets import hidden_paths  # noqa: E402
from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools import sandbox  # noqa: E402
from tools.sandbox import SandboxPolicy, confine  # noqa: E402
from tools.sandbox import limits as sandbox_limits  # noqa: E402
from tools.sandbox import warm as sandbox_warm  # noqa: E402
from tools.sandbox.limits import Limits  # noqa: E402
from tools.shell import bash_tool  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "sandbox.md"
TARGETS = {"full": 10.0, "full-cold": 10.0, "full-nocgroup": 10.0, "fallback": 25.0,
           "fallback-cold": 25.0}  # fmt: skip
COMMANDS = {"`true`": "true", "`python3 -c pass`": "python3 -c pass"}
LABELS = {
    "off": "no sandbox (`sandbox: off`, baseline)",
    "full": "namespaces: bubblewrap alone, seccomp on a descriptor, call cgroups (pids, "
    "memory), started by a waiter already in them (now)",
    "full-cold": "the same spawned cold, moved into the cgroups meanwhile (before the waiter)",
    "full-nocgroup": "namespaces, cold, no cgroup (a server that may make none)",
    "launcher": "namespaces + the launcher inside (Landlock; as before issue 37)",
    "fallback": "no namespaces: Landlock, seccomp, limits, supervision by a waiter (now)",
    "fallback-cold": "no namespaces: the same by a launcher started per call (before the waiter)",
}
VARIANTS = tuple(LABELS)


@contextlib.contextmanager
def variant(name: str, full: sandbox.SandboxSupport) -> Iterator[None]:
    pool = sandbox_limits.POOL
    saved = (sandbox.support, sandbox.confinement, pool.take, sandbox.Confinement.warm_form)
    fallback = name.startswith("fallback")
    state = dataclasses.replace(full, namespaces=None) if fallback else full
    original = sandbox.confinement

    def confinement(*args: object, **kwargs: object) -> sandbox.Confinement | None:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        if found is not None and name == "launcher":
            found = dataclasses.replace(found, launcher=True, landlock=True)
        return found

    sandbox.support = lambda: state  # type: ignore[assignment]
    sandbox.confinement = confinement  # type: ignore[assignment]
    if name == "full-nocgroup":
        pool.take = lambda limits, form=None: None  # type: ignore[method-assign]
    elif name in ("full-cold", "fallback-cold", "launcher"):
        # Cold: no waiter used or made; a group with none waiting in it.
        sandbox.Confinement.warm_form = lambda self: None  # type: ignore[method-assign]
        pool.take = lambda limits, form=None: pool.lend(limits) or pool.make(limits)  # type: ignore[method-assign]
    try:
        yield
    finally:
        sandbox.support, sandbox.confinement, pool.take, sandbox.Confinement.warm_form = saved  # type: ignore[method-assign]


PIECES = {
    "true": "`true` spawned directly (the pieces' baseline)",
    "bwrap": "`bwrap` with the full form's mounts (agent-lsp's files covered) `-- true`",
    "seccomp": "+ `--seccomp FD` (the filter on a pipe)",
    "prlimit": "+ the rlimits set by the server meanwhile (`--block-fd`): no cgroups",
    "cgroups": "+ moved into fresh call cgroups meanwhile too (the full form)",
    "join-after": "bwrap + seccomp, cgroups joined in turn (`echo 0 > cgroup.procs` inside)",
    "launcher": "bubblewrap + the launcher (Landlock, seccomp, limits) `-- true` (before)",
    "warm": "the full form handed to a waiter already in fresh call cgroups (now)",
}


def _pieces(root: Path, tmp: Path, hidden: tuple[Path, ...]) -> dict[str, Any]:
    """Each piece of the full form spawned alone (``true`` as the program)."""
    policy = SandboxPolicy(hidden_paths=hidden)
    full = sandbox.confinement(policy, root, tmp)
    assert full is not None and not full.launcher
    bare = dataclasses.replace(full, seccomp=False, limits=Limits(0, 0, 0, 0))
    no_limits = dataclasses.replace(full, limits=Limits(0, 0, 0, 0))
    launcher = dataclasses.replace(full, launcher=True, landlock=True)
    true = [shutil.which("true") or "/bin/true"]

    def run(launch: sandbox.Launch) -> None:
        """Spawn it as the tool does (Launch.join's work, here synchronously)."""
        with launch:
            child = subprocess.Popen(launch.argv, pass_fds=launch.pass_fds,
                                     stdin=launch.stdin)  # fmt: skip
            launch.close()
            if launch.info_fd is not None and launch.block_fd is not None:
                pid = confine._sandbox_pid(launch.info_fd)
                if pid is not None:
                    assert launch._settle(pid) is None
                    launch.go()  # the gate (bwrap.GATE) starts the program
                os.close(launch.block_fd)
                launch.block_fd = None
            assert child.wait() == 0

    def in_groups(after: bool) -> None:
        group = sandbox_limits.make_group(Limits(), f"agent-lsp-{os.getpid()}-bench")
        assert group is not None
        try:
            if after:
                join = "; ".join(f"echo 0 > {p}" for p in group.procs_files())
                argv = full._argv(["/bin/sh", "-c", f"{join}; exec true"],
                                  procs=group.procs_files())  # fmt: skip
                subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
                return
            run(full.launch(true, group=group))
        finally:
            while not group.remove():
                time.sleep(0.001)

    def warm_ready() -> tuple[sandbox_warm.Waiter, sandbox_limits.CallGroup]:
        """A waiter in fresh call cgroups, made before the timing starts (as after a call)."""
        waiter = sandbox_warm.spawn("bwrap")
        group = sandbox_limits.make_group(Limits(), f"agent-lsp-{os.getpid()}-bench-warm")
        assert group is not None and sandbox_warm.move(group, waiter.pid)
        # Waiting for its message (blocked in read(3, ...)), as after a call's quiet time:
        # its own start-up is not what is timed.
        read = {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine)
        for _ in range(5000):
            try:
                call = Path(f"/proc/{waiter.pid}/syscall").read_text().split()
            except OSError:
                break
            if read is None or call[:2] == [read, "0x3"]:
                break
            time.sleep(0.001)
        return waiter, group

    def warm(ready: tuple[sandbox_warm.Waiter, sandbox_limits.CallGroup]) -> None:
        waiter, group = ready
        try:
            assert waiter.start(full.warm_message(true, dict(os.environ), root))
            _, status = os.waitpid(waiter.pid, 0)
            assert status == 0, status
        finally:
            waiter.discard()
            while not group.remove():
                time.sleep(0.001)

    return {
        "warm": (warm_ready, warm),  # type: ignore[dict-item]
        "true": lambda: subprocess.run(true, check=True),
        "bwrap": lambda: run(bare.launch(true)),
        "seccomp": lambda: run(no_limits.launch(true)),
        "prlimit": lambda: run(full.launch(true)),
        "cgroups": lambda: in_groups(after=False),
        "join-after": lambda: in_groups(after=True),
        "launcher": lambda: run(launcher.launch(true)),
    }


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


async def measure(
    rounds: int,
) -> tuple[dict[str, dict[str, tuple[float, float, float]]], dict[str, float]]:
    full = sandbox.support()
    assert full.namespaces is not None and full.namespaces.net, full
    with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-") as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)  # noqa: ASYNC221
        home = Path(folder) / "home"
        (home / ".config" / "agent-lsp").mkdir(parents=True)
        (home / ".config" / "agent-lsp" / "config.toml").write_text("api_key = 'x'\n")
        hidden = hidden_paths({"HOME": str(home)})
        runtimes = {
            name: ToolRuntime(ToolRegistry([bash_tool(Workspace(root), policy=SandboxPolicy(
                "off" if name == "off" else "workspace-write", hidden_paths=hidden))]))
            for name in VARIANTS
        }  # fmt: skip
        # (wall, CPU of the processes the call ran, CPU of this process) per call.
        samples: dict[str, dict[str, list[tuple[float, float, float]]]] = {
            c: {v: [] for v in VARIANTS} for c in COMMANDS
        }
        pieces = _pieces(root, Path(folder), hidden)
        piece_samples: dict[str, list[float]] = {name: [] for name in pieces}
        for index in range(rounds + 2):
            for name in sorted(pieces, key=lambda n: hash((n, index))):
                time.sleep(0.05)  # noqa: ASYNC251 (the pieces are spawned synchronously)
                piece = pieces[name]
                if isinstance(piece, tuple):  # made ready first, untimed (a waiter)
                    ready = piece[0]()
                    time.sleep(0.05)  # noqa: ASYNC251
                    started = time.perf_counter()
                    piece[1](ready)
                else:
                    started = time.perf_counter()
                    piece()
                if index >= 2:
                    piece_samples[name].append((time.perf_counter() - started) * 1000)
            order = VARIANTS[index % len(VARIANTS) :] + VARIANTS[: index % len(VARIANTS)]
            for name in order:
                for label, command in COMMANDS.items():
                    with variant(name, full):
                        children, own = _children_cpu(), time.process_time()
                        started = time.perf_counter()
                        out = await runtimes[name].execute("bash", json.dumps({"command": command}))
                        wall = (time.perf_counter() - started) * 1000
                        cpu = _children_cpu() - children
                        server = (time.process_time() - own) * 1000
                    assert out.startswith("(no output)"), (name, out)
                    if index >= 2:  # the first rounds warm up (pool, caches)
                        samples[label][name].append((wall, cpu, server))
                    # Calls are seconds apart in real use (the model's turn between them):
                    # what the pools do after a call (a cgroup removed and made, the next
                    # waiter started) is done before the next one, as it would be there.
                    pending = [*sandbox_warm.POOL._tasks, *sandbox_limits.POOL._tasks]
                    await asyncio.gather(*pending, return_exceptions=True)
                    await asyncio.sleep(0.05)
        calls = {
            c: {
                v: tuple(statistics.median(x[i] for x in s) for i in range(3))
                for v, s in by.items()
            }  # type: ignore[misc]
            for c, by in samples.items()
        }
        return calls, {n: statistics.median(s) for n, s in piece_samples.items()}  # type: ignore[return-value]


def report(
    medians: dict[str, dict[str, tuple[float, float, float]]],
    pieces: dict[str, float],
    rounds: int,
    load: tuple[float, float],
    took: float,
) -> str:
    lines = [
        "### Bash sandbox cost per call",
        "",
        f"`uv run python bench/bench_sandbox.py --rounds {rounds}`; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, 1-minute load average "
        f"{load[0]:.2f} at the start, {load[1]:.2f} at the end (other jobs ran on the machine); "
        f"whole run {took:.0f} s; Linux {platform.release()}, "
        f"Landlock ABI {sandbox.support().abi}, "
        f"cgroups: pids {'yes' if sandbox_limits.pids_base() else 'no'}, memory "
        f"{'yes' if sandbox_limits.memory_base() else 'no'}; Python {platform.python_version()}. "
        "Medians of the rounds; each round runs every variant once per command through the "
        "real bash tool, in an order rotated round by round, 50 ms apart once what a call "
        "leaves to do in the background (its cgroup removed, the next one and the next "
        "waiter made) is done. Server CPU: this "
        "process's own (the tool, the event loop), which a loaded machine stretches far less "
        "than wall time (the sandboxed processes' CPU cannot be counted: bubblewrap's PID 1 "
        "reaps them and reports no usage).",
        "",
        "| command | sandbox | wall | no sandbox (same run) | added | target "
        "| server CPU | added |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for command, by in medians.items():
        base = by["off"]
        for name in VARIANTS:
            wall, _, server = by[name]
            added = wall - base[0]
            target = TARGETS.get(name)
            met = "met" if target is not None and added <= target else "NOT met"
            verdict = "baseline" if name == "off" else f"<= {target:g} ms: {met}" if target else ""
            lines.append(
                f"| {command} | {LABELS[name]} | {wall:.1f} ms | {base[0]:.1f} ms | "
                f"{added:+.1f} ms | {verdict} | {server:.1f} ms | {server - base[2]:+.1f} ms |"
            )
    lines += [
        "",
        "### Where the time goes",
        "",
        "Each piece spawned alone in the same rounds (`true` as the program), 50 ms apart:",
        "",
        "| piece | wall | over the row above |",
        "|---|---|---|",
    ]
    previous = None
    for name, label in PIECES.items():
        step = "" if previous is None else f"{pieces[name] - pieces[previous]:+.2f} ms"
        if name in ("join-after", "launcher"):
            step = f"{pieces[name] - pieces['prlimit']:+.2f} ms over the full form without cgroups"
        if name == "warm":
            step = (
                f"{pieces[name] - pieces['true']:+.2f} ms over `true`; "
                f"{pieces[name] - pieces['cgroups']:+.2f} ms against the full form cold"
            )
        lines.append(f"| {label} | {pieces[name]:.2f} ms | {step} |")
        previous = name if name not in ("join-after", "launcher", "warm") else previous
    true = medians["`true`"]
    added = {name: true[name][0] - true["off"][0] for name in VARIANTS}
    spawned = pieces["cgroups"] - pieces["true"]
    lines += [
        "",
        f"Through the tool, `true` now costs {added['full']:+.1f} ms with namespaces (a waiter "
        f"already in the call's cgroups runs bubblewrap), against {added['full-cold']:+.1f} ms "
        f"for the same form spawned cold and {added['launcher']:+.1f} ms for the form before "
        f"issue 37, in the same run; {added['full-nocgroup']:+.1f} ms where the server may "
        f"make no cgroup (cold: the process limit is set inside the user namespace, from "
        f"outside). Without namespaces {added['fallback']:+.1f} ms by a waiter against "
        f"{added['fallback-cold']:+.1f} ms through a launcher started per call.",
        "",
        f"Spawned alone, the cold full form is {spawned:+.1f} ms over `true`: bubblewrap's "
        f"namespaces and mounts {pieces['bwrap'] - pieces['true']:+.1f} ms (its own cost, the "
        f"floor of this design), the seccomp descriptor "
        f"{pieces['seccomp'] - pieces['bwrap']:+.1f} ms, the limits set from outside "
        f"{pieces['prlimit'] - pieces['seccomp']:+.1f} ms, the move into the call's cgroups "
        f"{pieces['cgroups'] - pieces['prlimit']:+.1f} ms although it runs while bubblewrap "
        f"builds its mounts (joined in turn, from inside: "
        f"{pieces['join-after'] - pieces['prlimit']:+.1f} ms; a process changing cgroup waits "
        "for an RCU grace period). Handed to a waiter that was moved into fresh call cgroups "
        "and was waiting for its message before the timing, the same form is "
        f"{pieces['warm'] - pieces['true']:+.1f} ms over "
        f"`true`: the move is off the path, the limits are set by the waiter before it "
        "execs bubblewrap, and the filter is on a pipe it makes itself. The waiter itself (an "
        "interpreter start, ~15-20 ms of CPU, and the move) is paid after the previous call, "
        "while nothing waits.",
        "",
        f"Verdict (issue 37): with namespaces {added['full']:+.1f} ms against the target of "
        f"+10 ms: {'met' if added['full'] <= 10 else 'NOT met'} in this run (bubblewrap's own "
        f"namespaces and mounts are {pieces['bwrap'] - pieces['true']:+.1f} ms of it here); "
        f"without namespaces {added['fallback']:+.1f} ms against +25 ms: "
        f"{'met' if added['fallback'] <= 25 else 'NOT met'}. Load average "
        f"{load[0]:.2f} to {load[1]:.2f} on {os.cpu_count()} CPUs: figures on a loaded "
        "machine stretch every spawn, the baseline's too.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    medians, pieces = asyncio.run(measure(args.rounds))
    text = report(
        medians, pieces, args.rounds, (load, os.getloadavg()[0]), time.perf_counter() - started
    )
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

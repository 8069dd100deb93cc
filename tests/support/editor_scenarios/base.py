"""What an editor-client scenario is, and how an editor's driver plays one.

A scenario owns what the Neovim and Emacs clients have in common: the workspace, the model's
script, the settings and the assertions over the records the editor emits. A driver
(tests/test_nvim_client.py, tests/test_emacs_client.py) gives, per scenario, only the
``Steps``: the editor script that drives the client and emits the records in the shared shape,
and the assertions on what only that editor does.

The shared shape of the records: a buffer's text is a string, as a file would hold it (Neovim
joins its lines and ends them with a newline, as its LSP client sends them); a list of lines
has no empty last line for the buffer's final newline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.support.model_server import ScriptedModel

Records = dict[str, Any]


@dataclass
class Run:
    """One scenario played in one editor: its folders, its model, what its steps share."""

    tmp_path: Path
    workspace: Path
    # The server's XDG_CONFIG_HOME in this editor's harness, for a user configuration file.
    config_home: Path
    model: ScriptedModel = field(init=False)
    # What arrange leaves for the editor script or the checks (a path, a process tag).
    state: dict[str, Any] = field(default_factory=dict)
    # Called when the editor script reaches a sync point of that name, before it resumes.
    on_sync: dict[str, Callable[[], None]] = field(default_factory=dict)


class Scenario:
    """One scenario: subclasses set the name and override what they need."""

    name: ClassVar[str]
    settings: ClassVar[Mapping[str, Any]] = {}
    data: ClassVar[Any] = None
    env_changes: ClassVar[Mapping[str, str | None]] = {}

    def make_model(self) -> ScriptedModel:
        return ScriptedModel()

    def arrange(self, run: Run) -> None:
        """Write the workspace's files and the model's script."""

    def check(self, run: Run, records: Records) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Steps:
    """One editor's part of a scenario."""

    # The editor script's body, or a function of the run that writes it.
    script: str | Callable[[Run], str]
    # What only this editor shows or does, asserted after the scenario's own checks.
    check: Callable[[Run, Records], None] | None = None
    # Settings of this editor's run only, over the scenario's.
    settings: Mapping[str, Any] = field(default_factory=dict)
    # The scenario's data as this editor's script reads it (default: as it is).
    data: Callable[[Any], Any] | None = None


Launch = Callable[..., Records]


def agent_part(conversation: str, prompt: str) -> str:
    """What a conversation shows for the agent after ``prompt``, up to the next prompt, without
    the line a client may give each finished tool call where it happened (Emacs: ``✓ read_file
    notes.txt (2 ms) [output]``) and an edit's diff lines under it (``  ┆ +new``)."""
    after = conversation.split(f"## You\n\n{prompt}\n\n## Agent\n\n", 1)[1]
    part = after.split("\n## You\n\n", 1)[0]
    kept = (line for line in part.split("\n") if line[:2] not in ("✓ ", "✗ "))
    return "\n".join(line for line in kept if not line.startswith("  ┆ ")).lstrip()


def play(scenario: Scenario, steps: Steps, run: Run, launch: Launch) -> None:
    """Arrange, run the editor script through ``launch`` (the driver's run_nvim/run_emacs with
    its folders bound), then check; the model serves until the checks are done."""
    with scenario.make_model() as model:
        run.model = model
        scenario.arrange(run)
        script = steps.script(run) if callable(steps.script) else steps.script
        records = launch(
            script,
            settings={**scenario.settings, **steps.settings},
            data=scenario.data if steps.data is None else steps.data(scenario.data),
            env_changes=dict(scenario.env_changes),
            on_sync=run.on_sync,
        )
        scenario.check(run, records)
        if steps.check is not None:
            steps.check(run, records)


def paired(scenarios: Iterable[Scenario], steps: Mapping[str, Steps]) -> list[Any]:
    """The parameters of a driver's scenario test, one per scenario, named after it.

    Every scenario needs the editor's steps and every steps a scenario: a name that does not
    match fails at collection rather than leaving a scenario silently unplayed.
    """
    scenarios = list(scenarios)
    names = [s.name for s in scenarios]
    missing = [n for n in names if n not in steps]
    unknown = [n for n in steps if n not in names]
    if missing or unknown:
        raise LookupError(f"steps missing for {missing}; steps of no scenario: {unknown}")
    return [pytest.param(s, steps[s.name], id=s.name) for s in scenarios]


# Named apart from the fixture so that a driver can import it and still call its own
# parameters "workspace".
@pytest.fixture(name="workspace")
def workspace_fixture(tmp_path: Path) -> Path:
    """The editor's project folder (its current folder), with one file."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello from the notes\n", encoding="utf-8")
    return folder

"""What an ask is told of the project: its system prompt, built anew at every ask, the
nested instructions its tools come upon, and the user's commands.

The system prompt is, in this order: the environment block (``project.environment``), the
base prompt (``project.prompts``: ours, or the user's ``systemPrompt``), the skills list and the
instructions (``project.skills``, ``project.instructions``). It replaces the
conversation's first message before each ask, so a changed ``AGENTS.md``, skill or setting
is in the next ask, and compaction counts what the model is really sent. Problems (a cut
file, a refused symlink, a malformed skill) are warned about once each.

The engine's :class:`Project` holds the user's folder and the warnings given. What it reads
of a conversation and of the settings is said here (:class:`Told`, :class:`PromptSettings`:
the engine's conversations and settings are both), since their packages sit above this one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tooling.context import PathNotes
from tooling.documents import EditorDocuments
from tooling.workspace import Workspace, WorkspaceError

from .. import protocol as p
from ..model.messages import Message, system_message
from . import commands as user_commands
from . import instructions as files
from . import skills as skill_files
from .environment import environment_block
from .prompts import system_prompt

if TYPE_CHECKING:
    from tools.sandbox import SandboxPolicy


class Approval(Protocol):
    """When the user is asked before a call runs (the environment block says it)."""

    @property
    def approval(self) -> str: ...


class PromptSettings(Protocol):
    """What of the settings an ask's system prompt and instructions are built from."""

    @property
    def sandbox(self) -> SandboxPolicy: ...
    @property
    def approval(self) -> Approval: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def instruction_files(self) -> tuple[str, ...]: ...
    @property
    def instructions_max_bytes(self) -> int: ...


class Told(Protocol):
    """A conversation as what it is told sees it: its messages (the first, the system
    prompt) and the nested instructions given it already."""

    messages: list[Message]
    instruction_folders: set[Path]
    nested_instructions: list[files.Instruction]


@dataclass(frozen=True)
class ProjectPrompt:
    system: str
    instructions: files.Instructions
    skills: skill_files.Skills


class Project:
    """The user's folders of instructions, skills and commands (``$XDG_CONFIG_HOME/agent-lsp``)
    and what warnings were given already."""

    def __init__(self, user_dir: Path | None, warn: Callable[[str], None]) -> None:
        self.user_dir = user_dir
        self._warn = warn
        self._warned: set[str] = set()

    @property
    def skills_dir(self) -> Path | None:
        return self.user_dir / "skills" if self.user_dir is not None else None

    async def prompt(
        self,
        workspace: Workspace,
        settings: PromptSettings,
        documents: EditorDocuments | None,
    ) -> ProjectPrompt:
        environment = await asyncio.to_thread(
            environment_block,
            [workspace.root],
            settings.sandbox,
            settings.approval.approval,
        )
        instructions, skills = await self.files(workspace, settings, documents)
        parts = [
            environment,
            system_prompt(workspace.root, settings.system_prompt),
            skill_files.render(skills.skills),
            files.render(instructions.files),
        ]
        return ProjectPrompt("\n\n".join(part for part in parts if part), instructions, skills)

    async def files(
        self,
        workspace: Workspace,
        settings: PromptSettings,
        documents: EditorDocuments | None,
    ) -> tuple[files.Instructions, skill_files.Skills]:
        """The instruction files and skills an ask is given (``agent/instructions``)."""
        instructions = await files.project_instructions(
            self.user_dir,
            workspace,
            settings.instruction_files,
            settings.instructions_max_bytes,
            documents,
        )
        skills = await asyncio.to_thread(skill_files.discover, self.skills_dir, workspace)
        self._warn_once([*instructions.warnings, *skills.warnings])
        return instructions, skills

    async def tell(
        self,
        conversation: Told,
        workspace: Workspace,
        settings: PromptSettings,
        documents: EditorDocuments | None,
    ) -> None:
        """Give ``conversation`` this ask's system prompt (its first message)."""
        told = await self.prompt(workspace, settings, documents)
        system = system_message(told.system)
        if conversation.messages and conversation.messages[0].get("role") == "system":
            conversation.messages[0] = system
        else:
            conversation.messages.insert(0, system)

    async def expand(self, prompt: str, workspace: Workspace) -> str:
        """``prompt`` with a leading ``/NAME`` of a prompt file expanded."""
        found = await asyncio.to_thread(self.commands, workspace)
        return user_commands.expand(prompt, found)[0]

    def nested(
        self,
        conversation: Told,
        workspace: Workspace,
        settings: PromptSettings,
        documents: EditorDocuments | None,
    ) -> PathNotes | None:
        """What a tool call that touched a path is followed by: the instructions of the
        subfolders on its way the conversation has not been given yet (None: none apply)."""
        names = settings.instruction_files
        if not names:
            return None

        async def note(path: str) -> str | None:
            try:
                target = workspace.resolve(path)
            except WorkspaceError:
                return None
            found = await files.nested_instructions(
                target,
                workspace,
                names,
                settings.instructions_max_bytes,
                documents,
                conversation.instruction_folders,
            )
            self._warn_once(found.warnings)
            if not found.files:
                return None
            conversation.nested_instructions.extend(found.files)
            folders = ", ".join(f"{Path(one.name).parent}/" for one in found.files)
            return (
                f"[Instructions for the files under {folders}: they apply there and take "
                "precedence over the instructions above]\n\n" + files.render(found.files)
            )

        return note

    def commands(self, workspace: Workspace | None) -> user_commands.Commands:
        """The built-in commands and the prompt files (call it off the loop)."""
        user = self.user_dir / "commands" if self.user_dir is not None else None
        found = user_commands.discover(user, workspace)
        self._warn_once(found.warnings)
        return found

    def _warn_once(self, warnings: list[str]) -> None:
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                self._warn(warning)


def instructions_result(
    instructions: files.Instructions, skills: skill_files.Skills, conversation: Told | None
) -> p.InstructionsResult:
    given = list(instructions.files)
    if conversation is not None:
        given += conversation.nested_instructions
    return p.InstructionsResult(
        instructions=[
            p.InstructionInfo(
                str(one.path), one.path.as_uri(), one.name, one.source, one.size, one.cut
            )
            for one in given
        ],
        skills=[p.SkillInfo(s.name, s.description, str(s.path), s.source) for s in skills.skills],
        warnings=[*instructions.warnings, *skills.warnings],
    )


def commands_result(found: user_commands.Commands) -> p.CommandsResult:
    return p.CommandsResult(
        [
            p.CommandInfo(
                c.name,
                c.description,
                c.source,
                c.argument_hint,
                str(c.path) if c.path is not None else None,
            )
            for c in found.listed()
        ]
    )

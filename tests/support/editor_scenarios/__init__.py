"""The editor-client scenarios the Neovim and Emacs clients share: one list, one driver each.

``SCENARIOS`` in the order the drivers play them; ``base`` says what a scenario and a
driver's steps are. Each scenario's docstring says what the editor script does and which
records it emits; the drivers (tests/test_nvim_client.py, tests/test_emacs_client.py) write
those scripts.
"""

from __future__ import annotations

from .asks import (
    AskAndFollowUp,
    CancelLongBash,
    CheckAndModelChoice,
    Compaction,
    EmptyOrCutAnswer,
    Selection,
    SettingsAndNewConversation,
    Streaming,
    UnsavedBuffers,
)
from .base import Records, Run, Scenario, Steps, paired, play, workspace_fixture
from .checkpoints_and_sandbox import Checkpoints, SandboxFallback, SandboxInForce
from .formatting import EditDiffs, EscapeControl, SandboxViews, TraceLines
from .mcp import (
    McpServerAwaitingApprovalSaid,
    McpServerMissingFromAnAsk,
    McpServersListingAndApproval,
    McpServerViews,
    McpToolThroughAnAsk,
)
from .permissions import (
    CancelDuringPrompt,
    EscapeSequencePrompt,
    GitHookWritePrompt,
    Grants,
    PermissionRequests,
)
from .project import BuiltinCommands, InstructionLines, InstructionsListing, PromptFiles

SCENARIOS: list[Scenario] = [
    EscapeControl(),
    TraceLines(),
    Compaction(),
    EmptyOrCutAnswer(),
    AskAndFollowUp(),
    UnsavedBuffers(),
    SettingsAndNewConversation(),
    CancelLongBash(),
    CheckAndModelChoice(),
    PermissionRequests(),
    EscapeSequencePrompt(),
    GitHookWritePrompt(),
    Grants(),
    CancelDuringPrompt(),
    Streaming(),
    Selection(),
    Checkpoints(),
    SandboxViews(),
    EditDiffs(),
    SandboxInForce(),
    SandboxFallback(),
    McpServerViews(),
    McpToolThroughAnAsk(),
    McpServerMissingFromAnAsk(),
    McpServerAwaitingApprovalSaid(),
    McpServersListingAndApproval(),
    InstructionLines(),
    InstructionsListing(),
    PromptFiles(),
    BuiltinCommands(),
]

__all__ = [
    "SCENARIOS",
    "Records",
    "Run",
    "Scenario",
    "Steps",
    "paired",
    "play",
    "workspace_fixture",
]

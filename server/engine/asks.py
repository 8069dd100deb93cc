"""What an ask is made of besides its loop: what its tool calls may use, and its result.

:meth:`server.engine.engine.AgentEngine.ask` runs the ask; these build its parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tooling.context import PathNotes, ToolContext

from .. import protocol as p
from ..agent.activity import (
    call_title,
    duration_text,
    output_head,
    stop_note,
    summarize_arguments,
)
from ..agent.events import EventSink
from ..agent.permissions import ApprovalPolicy, Asker, PermissionGate
from ..conversations.conversations import Conversation

if TYPE_CHECKING:
    from tooling.documents import EditorDocuments
    from tooling.language import LanguageFeatures

    from ..agent.loop import LoopResult
    from ..checkpoints.service import AskRecorder


def tool_context(
    conversation: Conversation,
    approval: ApprovalPolicy,
    *,
    documents: EditorDocuments | None,
    asker: Asker | None,
    on_event: EventSink | None,
    journal: AskRecorder | None,
    path_notes: PathNotes | None = None,
    unavailable: Callable[[str], str | None] | None = None,
    language: LanguageFeatures | None = None,
) -> ToolContext:
    """What the tool calls of one ask in ``conversation`` may use: its ledger (what the
    model has read), the editor's open documents, the permission gate (``approval``,
    the session's grants, the user through ``asker``; its requests are events), the
    ask's checkpoint ``journal``, and the conversation's archive for whole outputs that
    reach the model cut; ``path_notes``, what follows a call that touched a file (a
    subfolder's instructions); ``unavailable``, why a tool name not offered is not there
    (an MCP server waiting for approval); ``language``, the folder's language features."""
    permissions = PermissionGate(
        approval,
        conversation.grants,
        asker,
        session_id=conversation.id,
        emit=on_event or _ignore,
    )
    return ToolContext(
        ledger=conversation.ledger,
        documents=documents,
        session_id=conversation.id,
        permissions=permissions,
        journal=journal,
        keep_whole_output=conversation.archive.keep_output,
        path_notes=path_notes,
        unavailable=unavailable,
        language=language,
    )


def ask_result(
    session_id: str,
    loop: LoopResult,
    context: dict[str, int],
    model: str,
    checkpoint_id: str | None = None,
) -> p.AskResult:
    """The result of an ask whose loop ended with ``loop``; ``context``: the window's
    usage after it."""
    return p.AskResult(
        answer=loop.text,
        session_id=session_id,
        stop_reason=loop.stop_reason,
        turns=loop.turns,
        tool_calls=[
            p.ToolCallResult(
                call.id,
                call.name,
                call.arguments,
                call.ok,
                call.output,
                round(call.duration_ms, 1),
                round(call.waited_ms, 1),
                call_title(call.name, call.arguments),
                duration_text(round(call.duration_ms, 1), round(call.waited_ms, 1)),
                summarize_arguments(call.name, call.arguments),
                output_head(call.output),
            )
            for call in loop.tool_calls
        ],
        usage={**loop.usage.as_dict(), **context},
        model=model,
        checkpoint_id=checkpoint_id,
        stop_note=stop_note(loop.stop_reason),
    )


def _ignore(event: object) -> None:
    pass

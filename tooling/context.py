"""The per-call tool context: what a handler may use besides its arguments.

State is passed in, never reached for: the runtime hands every handler one
:class:`ToolContext`, built by the caller (the engine, per ask) and narrowed to
one call by :meth:`ToolContext.for_call`. Nothing here is looked up from a global
or a context variable, so two asks running at once never see each other's state.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .documents import EditorDocuments
from .journal import ChangeJournal
from .language import LanguageFeatures
from .ledger import FileLedger
from .permissions import Permissions

# A running call's progress: (progress, total or None, message or None), as MCP's
# notifications/progress carry it. Cheap to call often: the sink throttles.
ProgressSink = Callable[[float, float | None, str | None], None]
# Keeps a call's whole output (call id, text) where agent/toolOutput serves it, when the
# model gets a cut one.
OutputKeeper = Callable[[str, str], None]
# What the model must be told once a call has read or changed the file at a path (as the
# call gave it): a subfolder's own instructions, the first time; None: nothing.
PathNotes = Callable[[str], Awaitable[str | None]]


@dataclass
class CallWaits:
    """The time one call spent waiting for the user (its permission request), filled
    by the runtime and read by whoever timed the call."""

    seconds: float = 0.0


@dataclass(frozen=True)
class ToolContext:
    # What this conversation has seen of each file (stale-edit protection). A fresh
    # context has an empty ledger, so writes over existing files fail closed.
    ledger: FileLedger = field(default_factory=FileLedger)
    # The editor's open buffers, or None when the front end has no editor.
    documents: EditorDocuments | None = None
    session_id: str = ""
    call_id: str = ""
    # The ask's change journal (checkpoints), or None outside an ask that records one.
    journal: ChangeJournal | None = None
    # Set by the runtime when the call is cancelled: work running in a thread polls
    # it (asyncio cancellation cannot reach a thread).
    cancelled: threading.Event = field(default_factory=threading.Event)
    # The user's say over calls that need it (None: nobody to ask; such calls are refused).
    permissions: Permissions | None = None
    # Where this call reports its progress (None: nobody listens). Set per call.
    progress: ProgressSink | None = None
    # The conversation's keeper of whole outputs (None: only the model's text is kept).
    keep_whole_output: OutputKeeper | None = None
    # Notes for the paths calls read or change (the runtime appends them to the output).
    path_notes: PathNotes | None = None
    # This call's time spent waiting for the user. Set per call.
    waits: CallWaits = field(default_factory=CallWaits)
    # Why a tool name the registry does not have is not offered (e.g. its MCP server waits
    # for the user's approval), for the model; None: it is simply unknown.
    unavailable: Callable[[str], str | None] | None = None
    # The folder's language features (problems, definitions, ...): the editor's language
    # servers or those agent-lsp started; None: no source, the file tools report no problems.
    language: LanguageFeatures | None = None

    def for_call(self, call_id: str, progress: ProgressSink | None = None) -> ToolContext:
        """This context for one tool call: same conversation state, own cancel flag,
        progress sink and wait clock."""
        return dataclasses.replace(
            self,
            call_id=call_id,
            cancelled=threading.Event(),
            progress=progress,
            waits=CallWaits(),
        )

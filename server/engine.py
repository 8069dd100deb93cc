"""The agent engine: workspace folders, their tool runtimes, conversations, asks.

Protocol-free (no pygls here) so every front end and the tests drive the same
code; ``server.lsp_server`` is a thin mapping of JSON-RPC onto this class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace, WorkspaceError

from .conversations import Conversation, ConversationStore
from .errors import InvalidParamsError, NoWorkspaceFolderError, SessionBusyError
from .events import EventSink
from .model_config import ModelSettings, create_client, load_model_settings
from .prompts import system_prompt
from .session_files import SessionFiles
from .settings import AgentSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from tooling.documents import EditorDocuments

    from .agent_loop import LoopResult

# The loop, the tools and their assembly are imported on first use (a folder's first
# listTools or ask), keeping them off the server's start-up path.


class Folder:
    """One open workspace folder and the runtime built for it.

    The runtime is built on first use, not when the editor announces the folder,
    so ``initialize`` stays fast.
    """

    def __init__(
        self, workspace: Workspace, build: Callable[[], ToolRuntime], key: tuple[Any, ...]
    ) -> None:
        self.workspace = workspace
        self.runtime_key = key
        self._build = build
        self._runtime: ToolRuntime | None = None

    @property
    def runtime(self) -> ToolRuntime:
        if self._runtime is None:
            self._runtime = self._build()
        return self._runtime


@dataclass
class AskResult:
    answer: str
    session_id: str
    loop: LoopResult

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "sessionId": self.session_id,
            "stopReason": self.loop.stop_reason,
            "turns": self.loop.turns,
            "toolCalls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "ok": call.ok,
                    "output": call.output,
                    "durationMs": round(call.duration_ms, 1),
                }
                for call in self.loop.tool_calls
            ],
            "usage": self.loop.usage.as_dict(),
        }


class AgentEngine:
    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        max_conversations: int = 100,
        session_dir: Path | None = None,
    ) -> None:
        self._environ = environ
        self._settings = AgentSettings()
        self._folders: dict[Path, Folder] = {}
        files = SessionFiles(session_dir) if session_dir is not None else None
        self._conversations = ConversationStore(max_conversations=max_conversations, files=files)
        self._clients: dict[ModelSettings, AsyncOpenAI] = {}
        self._documents: EditorDocuments | None = None

    def attach_documents(self, documents: EditorDocuments | None) -> None:
        """Give the file tools the editor's open buffers (the language server does)."""
        self._documents = documents
        for root, folder in list(self._folders.items()):
            self._folders[root] = self._make_folder(folder.workspace)

    # -- configuration -------------------------------------------------------------

    @property
    def settings(self) -> AgentSettings:
        return self._settings

    def update_settings(self, settings: AgentSettings) -> None:
        """New editor settings; tool runtimes are rebuilt if their settings changed.

        Asks already running keep the runtime they started with.
        """
        if settings.enabled_tools is not None:
            from .bootstrap import check_enabled

            # Checked before committing, so a typo leaves the old tools in place.
            check_enabled(settings.enabled_tools)
        self._settings = settings
        for root, folder in list(self._folders.items()):
            if folder.runtime_key != settings.runtime_key():
                self._folders[root] = self._make_folder(folder.workspace)

    # -- workspace folders -----------------------------------------------------------

    def set_folders(self, paths: list[Path]) -> list[str]:
        """Replace the open folders; returns warnings for folders that cannot be used."""
        self._folders.clear()
        return [w for path in paths if (w := self.add_folder(path))]

    def add_folder(self, path: Path) -> str | None:
        try:
            workspace = Workspace(path)
        except WorkspaceError as exc:
            return str(exc)
        self._folders.setdefault(workspace.root, self._make_folder(workspace))
        return None

    def remove_folder(self, path: Path) -> None:
        self._folders.pop(Path(path).resolve(), None)

    @property
    def folders(self) -> list[Path]:
        return list(self._folders)

    def folder(self, path: Path | None) -> Folder:
        """The named folder, or the first; errors name what is wrong."""
        if not self._folders:
            raise NoWorkspaceFolderError(
                "No workspace folder is open: open a folder in the editor "
                "(agent-lsp acts only inside the editor's workspace folders)."
            )
        if path is None:
            return next(iter(self._folders.values()))
        resolved = Path(path).resolve()
        found = self._folders.get(resolved)
        if found is None:
            raise InvalidParamsError(
                "workspaceFolder", f"{path} is not one of the open workspace folders"
            )
        return found

    def _make_folder(self, workspace: Workspace) -> Folder:
        settings, documents = self._settings, self._documents

        def build() -> ToolRuntime:
            from .bootstrap import build_runtime

            return build_runtime(
                workspace,
                enabled=settings.enabled_tools,
                bash_timeout=settings.bash_timeout,
                documents=documents,
            )

        return Folder(workspace, build, settings.runtime_key())

    # -- requests ------------------------------------------------------------------

    def list_tools(self, folder: Path | None = None) -> list[dict[str, Any]]:
        return self.folder(folder).runtime.describe()

    def end_session(self, session_id: str) -> bool:
        return self._conversations.drop(session_id)

    def model_settings(self) -> ModelSettings:
        """Resolved model settings; raises ModelNotConfiguredError with what to set."""
        return load_model_settings(self._settings.model_overrides(), environ=self._environ)

    def _client(self, settings: ModelSettings) -> AsyncOpenAI:
        client = self._clients.get(settings)
        if client is None:
            client = self._clients[settings] = create_client(settings)
        return client

    async def ask(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        folder: Path | None = None,
        on_event: EventSink | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> AskResult:
        """Run one ask; ``on_session`` learns the session id before any tool runs."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidParamsError("prompt", "must be a non-empty string")

        conversation: Conversation | None = None
        if session_id is not None:
            conversation = self._conversations.get(session_id)
            if conversation is None:
                raise InvalidParamsError("sessionId", f"unknown session {session_id!r}")
            if folder is not None and Path(folder).resolve() != conversation.workspace_root:
                raise InvalidParamsError(
                    "workspaceFolder", "the session belongs to another workspace folder"
                )
            target = self.folder(conversation.workspace_root)
        else:
            target = self.folder(folder)

        # Fail before touching the conversation when the model is not configured.
        model_settings = self.model_settings()
        client = self._client(model_settings)
        settings = self._settings

        created = conversation is None
        if conversation is None:
            conversation = self._conversations.create(
                target.workspace.root,
                system_prompt(target.workspace.root, self._settings.system_prompt),
            )
        if conversation.lock.locked():
            raise SessionBusyError(
                f"Session {conversation.id} is already answering another ask; "
                "wait for it or cancel it first."
            )

        if on_session is not None:
            on_session(conversation.id)
        from tooling.context import ToolContext

        from .agent_loop import agent_loop

        async with conversation.lock:
            conversation.messages.append({"role": "user", "content": prompt})
            try:
                result = await agent_loop(
                    conversation.messages,
                    target.runtime,
                    client=client,
                    model=model_settings.model,
                    max_turns=settings.max_turns,
                    on_event=on_event,
                    context=ToolContext(
                        ledger=conversation.ledger,
                        documents=self._documents,
                        session_id=conversation.id,
                    ),
                )
            except BaseException:
                # A new conversation that failed before the model answered once is
                # useless (its id was never shown); otherwise keep it: tool activity
                # already named it, and it can continue after a cancel.
                if created and len(conversation.messages) <= 2:
                    self._conversations.drop(conversation.id)
                else:
                    self._conversations.save(conversation)
                raise
            self._conversations.save(conversation)
        return AskResult(answer=result.text, session_id=conversation.id, loop=result)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()

"""The editor's open documents over LSP (``tooling.documents``, for the file tools).

Reads come from pygls's incrementally synchronised copies; writes go to the editor
with ``workspace/applyEdit`` as a versioned, annotated edit, so they land in the
buffer, can be undone there, keep the user's other unsaved text, and are refused
by the editor if the buffer changed in the meantime.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from tooling.documents import BufferEdit, EditOutcome
from tools.textedit import minimal_edit

from ..positions import LineIndex

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer
    from pygls.workspace import TextDocument

    from ..settings.settings import AgentSettings

ANNOTATION_ID = "agent-lsp"


class LspDocuments:
    """The documents of ``ls``; ``settings`` gives the editor settings in force now."""

    def __init__(self, ls: LanguageServer, settings: Callable[[], AgentSettings]) -> None:
        self._ls = ls
        self._settings = settings

    def _document(self, path: Path) -> TextDocument | None:
        try:
            documents = self._ls.workspace.text_documents
        except RuntimeError:  # not initialized yet
            return None
        for uri, document in documents.items():
            fs_path = to_fs_path(uri)
            try:
                if fs_path and Path(fs_path).resolve() == path:
                    return document
            except (OSError, RuntimeError):  # a document path that cannot be resolved
                continue
        return None

    def open_paths(self) -> list[Path]:
        try:
            uris = list(self._ls.workspace.text_documents)
        except RuntimeError:  # not initialized yet
            return []
        paths = []
        for uri in uris:
            fs_path = to_fs_path(uri)
            try:
                if fs_path:
                    paths.append(Path(fs_path).resolve())
            except (OSError, RuntimeError):
                continue
        return paths

    def buffer_text(self, path: Path) -> str | None:
        document = self._document(path)
        return None if document is None else document.source

    async def read_text(self, path: Path) -> str | None:
        return self.buffer_text(path)  # pygls keeps every open document's text

    async def create_text(self, path: Path, text: str, *, label: str) -> EditOutcome | None:
        return None  # a new file is written on disk; the editor sees it appear

    def position_encoding(self) -> str:
        return _encoding(self._ls)

    def can_edit(self) -> bool:
        if not self._settings().edit_through_editor:
            return False
        workspace = self._ls.client_capabilities.workspace
        return bool(workspace and workspace.apply_edit)

    async def apply_edits(
        self, path: Path, base_text: str, edits: list[BufferEdit], *, label: str
    ) -> EditOutcome:
        confirm = self._settings().confirm_edits
        return await self._apply(path, base_text, edits, label=label, confirm=confirm)

    async def replace_text(self, path: Path, text: str, *, label: str) -> EditOutcome:
        """Make the buffer hold ``text`` (a rewind: the user already confirmed it)."""
        document = self._document(path)
        if document is None:
            return EditOutcome(False, "the document is not open any more")
        base = document.source
        return await self._apply(path, base, [minimal_edit(base, text)], label=label, confirm=False)

    async def delete_document(self, path: Path, *, label: str) -> EditOutcome | None:
        """Delete an open document's file through the editor (undoable there), or None
        when the client cannot delete files in a workspace edit."""
        document = self._document(path)
        caps = self._edit_capabilities()
        operations = (caps.resource_operations or []) if caps else []
        deletes = types.ResourceOperationKind.Delete in operations
        if document is None or not self.can_edit() or not deletes:
            return None
        edit = types.WorkspaceEdit(
            document_changes=[
                types.DeleteFile(
                    uri=document.uri, options=types.DeleteFileOptions(ignore_if_not_exists=True)
                )
            ]
        )
        result = await self._ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=label)
        )
        reason = "the editor refused to delete it" + (
            f" ({result.failure_reason})" if result.failure_reason else ""
        )
        return EditOutcome(True) if result.applied else EditOutcome(False, reason)

    async def _apply(
        self, path: Path, base_text: str, edits: list[BufferEdit], *, label: str, confirm: bool
    ) -> EditOutcome:
        document = self._document(path)
        if document is None or document.source != base_text:
            return EditOutcome(False, "the document changed in the editor meanwhile; read it again")
        edit_caps = self._edit_capabilities()
        annotate = bool(edit_caps and edit_caps.change_annotation_support)
        index = LineIndex(base_text, _encoding(self._ls))

        def text_edit(edit: BufferEdit) -> types.TextEdit:
            start, end = index.position(edit.start), index.position(edit.end)
            span = types.Range(start=types.Position(*start), end=types.Position(*end))
            if annotate:
                return types.AnnotatedTextEdit(
                    range=span, new_text=edit.text, annotation_id=ANNOTATION_ID
                )
            return types.TextEdit(range=span, new_text=edit.text)

        text_edits = [text_edit(edit) for edit in edits]
        if edit_caps and edit_caps.document_changes:
            # The version makes the editor refuse the edit if the user typed meanwhile.
            workspace_edit = types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=document.uri, version=document.version
                        ),
                        edits=text_edits,
                    )
                ],
                change_annotations=(
                    {
                        ANNOTATION_ID: types.ChangeAnnotation(
                            label=label,
                            needs_confirmation=confirm,
                            description="Change proposed by the agent",
                        )
                    }
                    if annotate
                    else None
                ),
            )
        else:
            workspace_edit = types.WorkspaceEdit(changes={document.uri: text_edits})
        result = await self._ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=workspace_edit, label=label)
        )
        if result.applied:
            return EditOutcome(True)
        if confirm and annotate:
            reason = "the user rejected this edit"
        else:
            reason = "the editor refused the edit"
        if result.failure_reason:
            reason += f" ({result.failure_reason})"
        return EditOutcome(False, reason)

    def _edit_capabilities(self) -> types.WorkspaceEditClientCapabilities | None:
        workspace = self._ls.client_capabilities.workspace
        return workspace.workspace_edit if workspace else None


def _encoding(ls: LanguageServer) -> str:
    encoding = ls.workspace.position_encoding
    value = getattr(encoding, "value", encoding)
    return str(value) if value in ("utf-8", "utf-32") else "utf-16"

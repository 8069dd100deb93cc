"""A test editor: a pytest-lsp client that holds open buffers and answers applyEdit.

It behaves like a real editor on the wire: documents are opened and typed into
with ``textDocument/didOpen``/``didChange`` (incremental, versioned), and a
``workspace/applyEdit`` is checked against the buffer's version, applied with
UTF-16 positions, and reported back with ``didChange`` before it answers. Its
position arithmetic is written independently of the server's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from .lsp_client import AgentTestClient, make_client

LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class Buffer:
    uri: str
    text: str
    version: int = 1
    undo: list[str] = field(default_factory=list)


def offset_of(text: str, line: int, character: int) -> int:
    """Python index of an LSP position (UTF-16 code units)."""
    starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]
    index = starts[line]
    units = 0
    while units < character:
        units += 2 if ord(text[index]) > 0xFFFF else 1
        index += 1
    return index


class TestEditor:
    __test__ = False  # not a pytest class

    def __init__(self, client: AgentTestClient, *, accept: bool = True) -> None:
        self.client = client
        self.accept = accept
        self.buffers: dict[str, Buffer] = {}
        self.apply_requests: list[types.ApplyWorkspaceEditParams] = []

    # -- what a user does ------------------------------------------------------------

    def open(self, path: Path) -> Buffer:
        uri = path.resolve().as_uri()
        buffer = Buffer(uri=uri, text=path.read_text())
        self.buffers[uri] = buffer
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="text", version=buffer.version, text=buffer.text
                )
            )
        )
        return buffer

    def type(self, buffer: Buffer, old: str, new: str) -> None:
        """Replace the first ``old`` with ``new`` in the buffer, unsaved."""
        start = buffer.text.index(old)
        self._change(buffer, start, start + len(old), new)

    def undo(self, buffer: Buffer) -> None:
        previous = buffer.undo.pop()
        self._replace_all(buffer, previous)

    # -- the wire --------------------------------------------------------------------

    def _position(self, text: str, index: int) -> types.Position:
        before = text[:index]
        line = len(LINE_BREAK.findall(before))
        last_break = max((m.end() for m in LINE_BREAK.finditer(before)), default=0)
        units = sum(2 if ord(ch) > 0xFFFF else 1 for ch in before[last_break:])
        return types.Position(line=line, character=units)

    def _change(self, buffer: Buffer, start: int, end: int, new: str) -> None:
        span = types.Range(
            start=self._position(buffer.text, start), end=self._position(buffer.text, end)
        )
        buffer.text = buffer.text[:start] + new + buffer.text[end:]
        buffer.version += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=buffer.uri, version=buffer.version
                ),
                content_changes=[types.TextDocumentContentChangePartial(range=span, text=new)],
            )
        )

    def _replace_all(self, buffer: Buffer, text: str) -> None:
        self._change(buffer, 0, len(buffer.text), text)

    def handle_apply_edit(self, params: types.ApplyWorkspaceEditParams) -> Any:
        self.apply_requests.append(params)
        if not self.accept:
            return types.ApplyWorkspaceEditResult(
                applied=False, failure_reason="user pressed Discard"
            )
        for change in params.edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            buffer = self.buffers[change.text_document.uri]
            if change.text_document.version != buffer.version:
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason="document version changed"
                )
            text = buffer.text
            # Apply from the end so earlier offsets stay valid.
            spans = sorted(
                (
                    (
                        offset_of(text, e.range.start.line, e.range.start.character),
                        offset_of(text, e.range.end.line, e.range.end.character),
                        e.new_text,
                    )
                    for e in change.edits
                ),
                reverse=True,
            )
            new_text = text
            for start, end, new in spans:
                new_text = new_text[:start] + new + new_text[end:]
            buffer.undo.append(text)
            self._replace_all(buffer, new_text)
        return types.ApplyWorkspaceEditResult(applied=True)


EDITOR_CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(
            document_changes=True,
            change_annotation_support=types.ChangeAnnotationsSupportOptions(groups_on_label=True),
        ),
    ),
    general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
)


def make_editor_client(accept: bool = True) -> AgentTestClient:
    client = make_client()
    editor = TestEditor(client, accept=accept)
    client.editor = editor  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> Any:
        return editor.handle_apply_edit(params)

    return client

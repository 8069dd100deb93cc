"""Saved conversations: a save costs what changed (a log line), the file reloads exactly,
and an ask that never finished stays listed (issues 25 and 26)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from server.conversations.conversations import Conversation, ConversationStore
from server.conversations.session_files import INTERRUPTED_NOTE, MAX_LOG_LINES, SessionFiles

ID = "ab" * 16


def conversation(root: Path, count: int = 0) -> Conversation:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    for i in range(count):
        messages.append({"role": "user", "content": f"ask {i}"})
        messages.append({"role": "assistant", "content": f"answer {i}"})
    return Conversation(ID, root, messages)


def ask(conv: Conversation, text: str) -> None:
    conv.messages.append({"role": "user", "content": text})
    conv.messages.append({"role": "assistant", "content": f"re: {text}"})


def test_a_save_after_new_messages_appends_them_and_the_file_reloads_exactly(
    tmp_path: Path,
) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path, 200)
    files.save(conv)
    whole = (tmp_path / f"{ID}.json").read_bytes()
    for n in range(3):
        ask(conv, f"more {n}")
        files.save(conv)
    assert (tmp_path / f"{ID}.json").read_bytes() == whole  # not rewritten
    lines = (tmp_path / f"{ID}.log").read_text().splitlines()
    assert len(lines) == 3
    assert len(lines[-1]) < 500  # the new messages only, not the 400 before them
    assert json.loads(lines[-1])["from"] == 401 + 4
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == conv.messages


def test_a_replaced_message_rewrites_the_file_and_the_log_starts_over(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path, 5)
    files.save(conv)
    ask(conv, "one")
    files.save(conv)
    assert (tmp_path / f"{ID}.log").exists()
    conv.messages[3] = {"role": "user", "content": "[summarized]"}  # as compaction does
    files.save(conv)
    assert not (tmp_path / f"{ID}.log").exists()
    ask(conv, "two")
    files.save(conv)
    del conv.messages[5:]  # as a rewind does
    files.save(conv)
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == conv.messages


def test_a_new_system_prompt_goes_into_the_log_line(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path, 3)
    files.save(conv)
    conv.messages[0] = {"role": "system", "content": "the AGENTS.md changed"}
    ask(conv, "next")
    files.save(conv)
    line = json.loads((tmp_path / f"{ID}.log").read_text())
    assert line["system"]["content"] == "the AGENTS.md changed"
    assert len(line["messages"]) == 2
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == conv.messages


def test_a_torn_last_line_and_an_older_files_log_are_ignored(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path, 2)
    files.save(conv)
    ask(conv, "kept")
    files.save(conv)
    kept = list(conv.messages)
    log = tmp_path / f"{ID}.log"
    with log.open("a") as handle:
        handle.write('{"base": "')  # the server died mid-write
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == kept
    # A crash between rewriting ID.json and removing the log: the log names the old file.
    stale = log.read_text().splitlines()[0]
    job = files.prepare(conv, whole=True)  # the whole file written again, the log gone
    assert job is not None
    files.write(job)
    log.write_text(stale + "\n")
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == kept


def test_the_log_is_folded_into_the_file_after_its_line_limit(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path)
    files.save(conv)
    for n in range(MAX_LOG_LINES + 3):
        ask(conv, f"q{n}")
        files.save(conv)
    assert len((tmp_path / f"{ID}.log").read_text().splitlines()) == 2
    whole = json.loads((tmp_path / f"{ID}.json").read_text())
    assert len(whole["messages"]) == 1 + 2 * (MAX_LOG_LINES + 1)
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == conv.messages


def test_a_loaded_conversation_goes_on_appending(tmp_path: Path) -> None:
    SessionFiles(tmp_path).save(conversation(tmp_path, 4))
    files = SessionFiles(tmp_path)  # a new server process
    conv = files.load(ID)
    assert conv is not None
    whole = (tmp_path / f"{ID}.json").read_bytes()
    ask(conv, "after the restart")
    files.save(conv)
    assert (tmp_path / f"{ID}.json").read_bytes() == whole
    loaded = SessionFiles(tmp_path).load(ID)
    assert loaded is not None and loaded.messages == conv.messages


def test_an_ask_that_never_finished_is_listed_interrupted_with_a_note_for_its_answer(
    tmp_path: Path,
) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path)
    conv.messages.append({"role": "user", "content": "the first ask"})
    files.save(conv, state="running")  # the ask's start; then the server was killed
    store = ConversationStore(files=SessionFiles(tmp_path))
    (meta,) = store.summaries(tmp_path)
    assert (meta.state, meta.title, meta.asks) == ("interrupted", "the first ask", 1)
    loaded = store.get(ID)
    assert loaded is not None
    assert loaded.messages[-2:] == [
        {"role": "user", "content": "the first ask"},
        {"role": "assistant", "content": INTERRUPTED_NOTE},
    ]
    # In memory now (a client asked about it), its last ask still never finished.
    (still,) = store.summaries(tmp_path)
    assert still.state == "interrupted"
    ask(loaded, "a follow-up")
    (continued,) = store.summaries(tmp_path)  # a new ask since: no longer interrupted
    assert continued.state == "done"
    store.save(loaded)
    again = SessionFiles(tmp_path).load(ID)
    assert again is not None and again.messages == loaded.messages
    assert [m["content"] for m in again.messages].count(INTERRUPTED_NOTE) == 1


def test_a_save_prepared_before_the_conversation_was_deleted_never_lands(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    conv = conversation(tmp_path, 1)
    job = files.prepare(conv, state="running")
    assert job is not None
    files.delete(ID)  # the ask failed unanswered and took its new conversation with it
    files.write(job)
    assert list(tmp_path.iterdir()) == []

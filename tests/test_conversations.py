"""Conversation store and system prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from server.conversations.conversations import Conversation, ConversationStore
from server.project.prompts import default_system_prompt, system_prompt


def test_create_starts_with_the_system_prompt(tmp_path: Path) -> None:
    store = ConversationStore()
    conversation = store.create(tmp_path, "Be helpful.")
    assert isinstance(conversation, Conversation)
    assert conversation.workspace_root == tmp_path
    assert conversation.messages == [{"role": "system", "content": "Be helpful."}]
    assert isinstance(conversation.lock, asyncio.Lock)
    assert conversation.created <= conversation.updated
    assert len(conversation.id) == 32 and int(conversation.id, 16) >= 0
    other = store.create(tmp_path, "Be helpful.")
    assert other.id != conversation.id
    assert other.messages is not conversation.messages
    assert len(store) == 2


def test_get_drop_and_membership(tmp_path: Path) -> None:
    store = ConversationStore()
    conversation = store.create(tmp_path, "p")
    assert store.get(conversation.id) is conversation
    assert conversation.id in store
    assert store.get("missing") is None
    assert store.drop(conversation.id) is True
    assert store.drop(conversation.id) is False
    assert store.get(conversation.id) is None
    assert len(store) == 0


def test_least_recently_used_is_dropped_beyond_the_cap(tmp_path: Path) -> None:
    store = ConversationStore(max_conversations=2)
    first = store.create(tmp_path, "p")
    second = store.create(tmp_path, "p")
    assert store.get(first.id) is first  # using it makes "second" the oldest
    third = store.create(tmp_path, "p")
    assert len(store) == 2
    assert store.get(second.id) is None
    assert store.get(first.id) is first and store.get(third.id) is third
    assert store.ids() == [first.id, third.id]


async def test_a_busy_conversation_is_not_evicted_while_idle_ones_exist(tmp_path: Path) -> None:
    store = ConversationStore(max_conversations=2)
    busy = store.create(tmp_path, "p")
    idle = store.create(tmp_path, "p")
    async with busy.lock:
        assert busy.busy
        newest = store.create(tmp_path, "p")
        assert busy.id in store and newest.id in store
        assert idle.id not in store
    assert not busy.busy


async def test_the_lock_serialises_asks(tmp_path: Path) -> None:
    conversation = ConversationStore().create(tmp_path, "p")
    order: list[str] = []

    async def ask(name: str) -> None:
        async with conversation.lock:
            order.append(f"{name} start")
            await asyncio.sleep(0.05)
            order.append(f"{name} end")

    await asyncio.gather(ask("a"), ask("b"))
    assert order == ["a start", "a end", "b start", "b end"]


def test_the_cap_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ConversationStore(max_conversations=0)


def test_default_system_prompt_names_the_folder_and_asks_for_tool_use(tmp_path: Path) -> None:
    prompt = default_system_prompt(tmp_path)
    assert str(tmp_path) in prompt
    assert "{workspace}" not in prompt
    assert "tools" in prompt


def test_default_system_prompt_asks_to_cite_files_as_path_line(tmp_path: Path) -> None:
    # The editors link `path:line` references (VS Code's chat view, for one).
    assert "`path:line`" in default_system_prompt(tmp_path)


def test_override_fills_the_workspace_placeholder_and_keeps_other_braces(tmp_path: Path) -> None:
    prompt = system_prompt(tmp_path, 'Work in {workspace}. Output JSON like {"ok": true}.')
    assert prompt == f'Work in {tmp_path}. Output JSON like {{"ok": true}}.'
    assert system_prompt(tmp_path, None) == default_system_prompt(tmp_path)
    assert system_prompt(tmp_path, "   ") == default_system_prompt(tmp_path)

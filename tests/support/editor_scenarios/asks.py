"""Scenarios of asking: the answer, the trace, the session, the buffers, cancelling, settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from tests.support.model_server import ScriptedModel, instant_responder, tool_call
from tests.support.procs import pids_with, unique_tag, wait_until
from tests.support.trace_cases import (
    COMPACTION_CASES,
    STAMP,
    expected_compaction_lines,
    user_texts,
)

from .base import Records, Run, Scenario, agent_part


class Compaction(Scenario):
    """A model of 8,000 tokens; each ask reads a 20 KB file three times, then the user
    compacts. records: lines (COMPACTION_CASES formatted), conversation, trace."""

    name = "compactions_show_in_the_trace_and_the_compact_command_compacts"
    settings: ClassVar[dict[str, Any]] = {"contextWindow": 8_000}
    data = COMPACTION_CASES

    def make_model(self) -> ScriptedModel:
        reader = instant_responder(
            "read_file", {"path": "big.log"}, tool_turns=3, answer="Read it."
        )
        return ScriptedModel(reader, context_limit=8_000, alternation=True)

    def arrange(self, run: Run) -> None:
        (run.workspace / "big.log").write_text(
            "".join(f"{n:05d}: build output\n" for n in range(1000))
        )

    def check(self, run: Run, records: Records) -> None:
        assert [line[9:] for line in records["lines"]] == expected_compaction_lines()
        assert run.model.refused == []
        conversation = records["conversation"]
        # The ask's footer says how full the window is and that the ask compacted.
        assert re.search(
            r"_\(3 tool calls, context [\d,]+ of 8,000 tokens, compacted: [\d,]+ → [\d,]+ "
            r"tokens of 8,000 \([^)]*\)\)_",
            conversation,
        ), conversation
        compactions = [line for line in records["trace"] if " ⇣ compacted: " in line]
        assert len(compactions) >= 2  # during the ask, then the compact command
        assert all(
            re.fullmatch(STAMP + r" ⇣ compacted: .* tokens of 8,000.*", c) for c in compactions
        )
        # The compact command: a summary request, then its result in the conversation.
        assert not run.model.bodies[-1].get("tools")
        assert re.search(
            r"^_\(compacted: [\d,]+ → [\d,]+ tokens of 8,000 \([^)]*messages summarized\)\)_$",
            conversation,
            re.M,
        ), conversation


class EmptyOrCutAnswer(Scenario):
    """Asks "say something" (no answer), then "say more" (cut). records: conversation."""

    name = "an_empty_or_cut_answer_is_said_so"

    def arrange(self, run: Run) -> None:
        run.model.reply(None)
        run.model.reply("The first half", finish_reason="length")

    def check(self, run: Run, records: Records) -> None:
        conversation = records["conversation"]
        # Then the context used: "_(0 tool calls, <note>, context N of M tokens)_".
        assert (
            "## Agent\n\n_(0 tool calls, the model returned nothing (no text and no tool calls)"
            in conversation
        )
        assert (
            "## Agent\n\nThe first half\n\n"
            "_(0 tool calls, the answer was cut off at the model's output token limit"
        ) in conversation


class AskAndFollowUp(Scenario):
    """With notes.txt open: "what do the notes say?", then "and again?". records:
    conversation, trace, first_session, second_session, root (the client's project root).
    state: outside, a file outside the project for the editor to open."""

    name = "ask_shows_answer_trace_and_follow_up_reuses_session"

    def arrange(self, run: Run) -> None:
        outside = run.tmp_path / "elsewhere" / "other.txt"
        outside.parent.mkdir()
        outside.write_text("not in the project\n", encoding="utf-8")
        run.state["outside"] = outside
        run.model.reply(
            tool_calls=[
                tool_call("read_file", {"path": "notes.txt"}),
                tool_call("read_file", {"path": "missing.txt"}),
            ]
        )
        run.model.reply("The notes say *hello*.\nSecond line.")
        run.model.reply("Still hello.")

    def check(self, run: Run, records: Records) -> None:
        conversation = records["conversation"]
        answer = agent_part(conversation, "what do the notes say?")
        assert answer.startswith("The notes say *hello*.\nSecond line."), conversation
        assert "## You\n\nand again?\n\n## Agent\n\nStill hello." in conversation
        assert "_working" not in conversation

        trace = records["trace"]
        assert len(trace) == 4, trace
        patterns = [
            rf"{STAMP} → read_file notes\.txt",
            rf"{STAMP} ✓ read_file notes\.txt \(\d+ ms\)",
            rf"{STAMP} → read_file missing\.txt",
            rf"{STAMP} ✗ read_file missing\.txt \(\d+ ms\): Error: \S.*",
        ]
        for pattern in patterns:
            assert any(re.fullmatch(pattern, line) for line in trace), (pattern, trace)

        assert records["first_session"] and records["first_session"] == records["second_session"]
        follow_up = run.model.bodies[-1]
        assert user_texts(follow_up) == ["what do the notes say?", "and again?"]
        assert any(
            m["role"] == "assistant" and m.get("content") == "The notes say *hello*.\nSecond line."
            for m in follow_up["messages"]
        )
        # The agent acted in the project root: the read succeeded with the file's text.
        tool_results = [
            m["content"] for m in run.model.bodies[1]["messages"] if m["role"] == "tool"
        ]
        assert any("hello from the notes" in text for text in tool_results)
        # Path(): Emacs names a folder with a final slash (its driver checks that).
        assert Path(records["root"]) == run.workspace.resolve()


class UnsavedBuffers(Scenario):
    """notes.txt open and changed to "typed but not saved\\n", unsaved; asks "fix my notes".
    records: text (the buffer's), modified, shown (the conversation, its calls included)."""

    name = "the_agent_reads_and_edits_unsaved_buffers"

    def arrange(self, run: Run) -> None:
        run.model.reply(tool_calls=[tool_call("read_file", {"path": "notes.txt"})])
        run.model.reply(
            tool_calls=[
                tool_call(
                    "edit_file", {"path": "notes.txt", "old_text": "typed", "new_text": "fixed"}
                )
            ]
        )
        run.model.reply("Edited.")

    def check(self, run: Run, records: Records) -> None:
        # read_file saw the buffer, not the disk; edit_file went through workspace/applyEdit
        # into the buffer, which stays unsaved (undoable there).
        read_result = next(m for m in run.model.bodies[1]["messages"] if m["role"] == "tool")
        assert "typed but not saved" in read_result["content"]
        assert records["text"] == "fixed but not saved\n"
        assert records["modified"] is True
        notes = run.workspace / "notes.txt"
        assert notes.read_text(encoding="utf-8") == "hello from the notes\n"
        # Issue 34: the edit shows as its diff under its call, not as JSON.
        assert "  ┆ edit notes.txt: +1 -1\n  ┆ -typed\n  ┆ +fixed\n" in records["shown"]


class SettingsAndNewConversation(Scenario):
    """Lists the tools; asks with the prompt typed in ("typed question"); starts a new
    conversation; changes enabledTools to ["glob"] while the server runs; asks "start over";
    lists the saved conversations; deletes the first one, confirmed; lists them again.
    records: tools (the list's text), input_prompt, first_session, second_session,
    conversation, trace, history (the list's text after the new conversation), question
    (the deletion's confirmation), after_delete (the list's text after it), and in Neovim
    pickers (the prompts of the pickers the deletion went through)."""

    name = "settings_tools_prompt_input_and_new_conversation"
    settings: ClassVar[dict[str, Any]] = {"enabledTools": ["read_file", "glob"], "maxTurns": 3}

    def arrange(self, run: Run) -> None:
        run.model.reply("first answer")
        run.model.reply("fresh answer")

    def check(self, run: Run, records: Records) -> None:
        tools = records["tools"]
        assert "- **read_file** (read-only): " in tools
        assert "- **glob** (read-only): " in tools
        assert "bash" not in tools
        # The settings went to the server as initializationOptions.
        bodies = run.model.bodies
        offered = [t["function"]["name"] for t in bodies[0]["tools"]]
        assert sorted(offered) == ["glob", "read_file"]

        assert records["input_prompt"]
        assert user_texts(bodies[0]) == ["typed question"]
        assert user_texts(bodies[1]) == ["start over"]
        assert [t["function"]["name"] for t in bodies[1]["tools"]] == ["glob"]
        assert records["first_session"] and records["second_session"]
        assert records["first_session"] != records["second_session"]
        conversation = records["conversation"]
        assert (
            conversation.index("first answer")
            < conversation.index("---")
            < conversation.index("fresh answer")
        )
        assert "-- new conversation --" in records["trace"]
        # Issue 34: a new conversation never deletes the old one; deleting is its own,
        # confirmed, command.
        assert "typed question" in records["history"] and "start over" in records["history"]
        assert '"typed question" for good' in records["question"]
        assert "checkpoints" in records["question"]
        assert "typed question" not in records["after_delete"]
        assert "start over" in records["after_delete"]
        # Neovim deletes it from inside the :AgentHistory picker (its last entry offers the
        # list again to delete one), Emacs with D in its history buffer.
        if "pickers" in records:
            assert records["pickers"] == ["Reopen a conversation:", "Delete a conversation:"]
            assert "(delete one of these conversations…)" in records["history"]
        else:
            assert "D deletes it" in records["history"]


class CancelLongBash(Scenario):
    """Asks "warm up"; "run the long thing" (bash sleeps 30 s), cancelled at sync point "running"
    once bash runs; sync point "cancelled"; then "go on". records: conversation, trace.
    state: tag, the bash command's process tag."""

    name = "cancel_stops_a_long_bash_and_the_session_continues"

    def arrange(self, run: Run) -> None:
        tag = run.state["tag"] = unique_tag()
        seen = run.state["seen"] = {}
        run.model.reply("ready")
        # `; : tag` keeps bash itself alive (and tagged) instead of exec-ing sleep.
        run.model.reply(
            tool_calls=[tool_call("bash", {"command": f"sleep 30; : {tag}"}, id="long")]
        )
        run.model.reply("after the cancel")

        def running() -> None:
            seen["running"] = wait_until(lambda: len(pids_with(tag)) > 0, 10)

        def cancelled() -> None:
            seen["gone"] = wait_until(lambda: not pids_with(tag), 5)

        run.on_sync.update(running=running, cancelled=cancelled)

    def check(self, run: Run, records: Records) -> None:
        assert run.state["seen"] == {"running": True, "gone": True}
        conversation = records["conversation"]
        # "_(cancelled)_" is written only for the server's -32800 reply.
        assert agent_part(conversation, "run the long thing").startswith("_(cancelled)_\n")
        assert "## You\n\ngo on\n\n## Agent\n\nafter the cancel" in conversation
        tag = run.state["tag"]
        assert any(
            re.fullmatch(rf"{STAMP} ✗ bash sleep 30; : {tag} \(\d+ ms\): .+", line)
            for line in records["trace"]
        ), records["trace"]
        # The follow-up continued the session, which stayed consistent: the cancelled
        # call got its tool result.
        last = run.model.bodies[-1]
        assert user_texts(last) == ["warm up", "run the long thing", "go on"]
        cancelled_results = [m for m in last["messages"] if m.get("tool_call_id") == "long"]
        assert cancelled_results == [
            {"role": "tool", "tool_call_id": "long", "content": "Error: cancelled"}
        ]


KEY = "sk-editor-user-file-DO-NOT-LEAK"


class CheckAndModelChoice(Scenario):
    """The endpoint only in the user configuration file (run.config_home), not in the
    environment; the connection check, then the user picks "big-model" and asks "which
    model?". records: check (the check's lines), offered (the choice's), conversation."""

    name = "check_and_model_choice_with_the_user_configuration_file"
    env_changes: ClassVar[dict[str, Any]] = {"MODEL_API_KEY": None, "BASE_URL": None, "MODEL": None}

    def make_model(self) -> ScriptedModel:
        return ScriptedModel(models=["scripted", "big-model"], api_key=KEY)

    def arrange(self, run: Run) -> None:
        config = run.config_home / "agent-lsp" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(
            f'api_key = "{KEY}"\nbase_url = "{run.model.base_url}"\nmodel = "scripted"\n'
        )
        config.chmod(0o600)
        run.state["config"] = config
        run.model.reply("OK")  # the check's tiny request
        run.model.reply("answered by the big model")

    def check(self, run: Run, records: Records) -> None:
        check = records["check"]
        assert check[0] == "# agent-lsp connection check"
        assert [line.split(":")[0] for line in check[2:6]] == [
            "✓ configuration",
            "✓ models",
            "✓ model",
            "✓ request",
        ]
        assert check[-1] == "The endpoint works."
        assert "Key from " in check[2]  # which file, as each editor's harness placed it
        assert KEY not in "\n".join(check)
        assert run.model.bodies[-1]["model"] == "big-model"
        assert run.model.requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"
        assert "answered by the big model" in records["conversation"]


class Streaming(Scenario):
    """Asks "stream it": the reasoning, then ~70 chunks over ~2 s. records: partial (the
    conversation once "Part 0" shows), running (then), conversation (at the end)."""

    name = "the_answer_streams_into_the_conversation"
    ANSWER = "".join(f"Part {i} of the answer.\n" for i in range(12))

    def arrange(self, run: Run) -> None:
        run.model.reply(
            self.ANSWER,
            reasoning_content="Thinking it over.\nTwo lines of it.",
            chunk_size=5,
            chunk_delay=0.03,  # ~70 chunks over ~2 s
        )

    def check(self, run: Run, records: Records) -> None:
        assert records["running"] is True  # text was shown while the model still wrote
        partial = records["partial"]
        assert "Part 11" not in partial
        assert re.search(r"\n_working[^\n]*_\n$", partial), partial  # the status line below

        conversation = records["conversation"]
        expected = (
            "## You\n\nstream it\n\n## Agent\n\n"
            "> Thinking it over.\n> Two lines of it.\n\n"  # reasoning, quoted, first
            + self.ANSWER  # ends with a newline: an empty last line, then a blank one
            + "\n\n_(0 tool calls"  # the footer
        )
        assert expected in conversation, conversation
        assert conversation.count("Part 0 of") == 1
        assert "_working" not in conversation


class Selection(Scenario):
    """notes.txt: "# notes\\n😀 smile: alpha beta\\ngamma delta\\n". First "what is this?" with
    "alpha" (after a character of two UTF-16 units) to "gam" selected; then a second ask, the
    driver's own (another selection, or none). records: conversation."""

    name = "the_selection_goes_with_the_ask"

    def arrange(self, run: Run) -> None:
        (run.workspace / "notes.txt").write_text("# notes\n😀 smile: alpha beta\ngamma delta\n")
        run.model.reply("It is Greek.")
        run.model.reply("The second answer.")

    def check(self, run: Run, records: Records) -> None:
        first = run.model.bodies[0]["messages"][-1]["content"]
        assert first.startswith("what is this?\n\n[Editor context]\n")
        assert "notes.txt, with lines 2-3 selected:\n```\nalpha beta\ngam\n```" in first
        assert (
            "what is this?\n\n_(selection: notes.txt, lines 2-3)_\n\n## Agent"
            in records["conversation"]
        )

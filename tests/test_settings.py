"""Editor settings parsing: bad values are reported and ignored, never fatal."""

from __future__ import annotations

from pathlib import Path

from server.settings.settings import AgentSettings, read_settings
from tools.sandbox import SandboxPolicy


def test_defaults() -> None:
    assert read_settings(None) == AgentSettings()
    assert read_settings({}) == AgentSettings()


def test_section_or_flat() -> None:
    flat = read_settings({"model": "m", "maxTurns": 3})
    nested = read_settings({"agentLsp": {"model": "m", "maxTurns": 3}})
    assert flat == nested
    assert flat.model == "m"
    assert flat.max_turns == 3


def test_all_fields() -> None:
    settings = read_settings(
        {
            "model": "deepseek-chat",
            "baseUrl": "http://127.0.0.1:1/v1",
            "requestTimeout": 30,
            "maxRetries": 0,
            "maxTurns": 7,
            "enabledTools": ["read_file"],
            "bashTimeout": 5.5,
            "systemPrompt": "Work in {workspace}",
            "sandbox": "read-only",
            "writableRoots": ["/opt/cache", "~/.cache/uv"],
            "network": True,
        }
    )
    assert settings.warnings == ()
    assert settings.model_overrides() == {
        "model": "deepseek-chat",
        "baseUrl": "http://127.0.0.1:1/v1",
        "timeout": 30,
        "maxRetries": 0,
    }
    assert settings.enabled_tools == ("read_file",)
    assert settings.bash_timeout == 5.5
    policy = SandboxPolicy("read-only", (Path("/opt/cache"), Path.home() / ".cache/uv"), True)
    assert settings.sandbox == policy
    assert settings.tools() == (("read_file",), 5.5, policy, False, 1500)  # read_only: a mode


def test_the_sandbox_is_on_by_default() -> None:
    assert read_settings({}).sandbox == SandboxPolicy("workspace-write", (), network=False)


def test_bad_sandbox_values_keep_the_safe_defaults() -> None:
    settings = read_settings(
        {"sandbox": "none", "writableRoots": ["relative/dir", "/ok"], "network": "yes"}
    )
    assert settings.sandbox == SandboxPolicy("workspace-write", (Path("/ok"),), network=False)
    assert len(settings.warnings) == 3
    assert read_settings({"writableRoots": "/tmp"}).sandbox.writable_roots == ()


def test_zero_means_the_servers_default() -> None:
    settings = read_settings({"bashTimeout": 0, "requestTimeout": 0, "model": ""})
    assert settings.warnings == ()
    assert settings.bash_timeout is None
    assert settings.model_overrides() == {}


def test_bad_values_are_ignored_with_warnings() -> None:
    settings = read_settings(
        {
            "model": 5,
            "maxTurns": -1,
            "bashTimeout": 601,
            "enabledTools": "bash",
            "maxRetries": True,
        }
    )
    assert settings.model is None
    assert settings.max_turns == 50
    assert settings.bash_timeout is None
    assert settings.enabled_tools is None
    assert settings.max_retries is None
    assert len(settings.warnings) == 5
    assert any("agentLsp.bashTimeout must be at most 600" in w for w in settings.warnings)


def test_api_key_is_not_a_setting() -> None:
    settings = read_settings({"apiKey": "sk-secret", "model": "m"})
    assert "sk-secret" not in repr(settings)
    assert "apiKey" not in settings.model_overrides()


def test_non_object() -> None:
    assert read_settings([1, 2]).warnings


def test_context_window_and_compaction_threshold() -> None:
    assert (AgentSettings().context_window, AgentSettings().compact_threshold) == (None, 0.8)
    settings = read_settings({"contextWindow": 65_536, "compactThreshold": 0.7})
    assert settings.warnings == ()
    assert (settings.context_window, settings.compact_threshold) == (65_536, 0.7)
    bad = read_settings({"contextWindow": 1.5, "compactThreshold": 1.2})
    assert (bad.context_window, bad.compact_threshold) == (None, 0.8)
    assert len(bad.warnings) == 2
    assert any("compactThreshold must be a number from 0.1 to 0.95" in w for w in bad.warnings)
    assert read_settings({"compactThreshold": True}).warnings


def test_the_sandboxs_network_hosts_and_limits() -> None:
    settings = read_settings(
        {
            "allowedDomains": ["PyPI.org.", "*.npmjs.org", "https://x.org/", "*.com"],
            "maxProcesses": 64,
            "maxFileSizeMB": 10,
            "maxMemoryMB": "lots",
        }
    )
    assert settings.sandbox.allowed_domains == ("pypi.org", "*.npmjs.org")
    assert settings.sandbox.limits.processes == 64
    assert settings.sandbox.limits.file_size_mb == 10
    assert settings.sandbox.limits.memory_mb == 8192  # the default stands
    assert len(settings.warnings) == 3, settings.warnings
    assert any("https://x.org/" in w and "not a URL" in w for w in settings.warnings)
    assert any("maxMemoryMB must be a positive integer" in w for w in settings.warnings)
    bad = read_settings({"allowedDomains": "pypi.org"})
    assert bad.warnings == (
        "agentLsp.allowedDomains must be a list of host names; the default ([]) stands",
    )

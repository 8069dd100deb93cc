"""Every ACP frame of a test against the protocol's schema, as the SDK ships it.

The ``agent-client-protocol`` SDK carries the ACP v1 schema as its generated models
(``acp.schema``, from the protocol's ``schema/v1`` JSON Schema); their JSON Schema is what
each frame is checked against, with ``jsonschema`` (not by parsing with the models: the SDK
salvages some invalid fields instead of failing). Requests and notifications are checked by
method, responses by the method of the request they answer, errors against ``Error``.
Methods the SDK does not model (the unstable ``session/set_model``) are not checked.
"""

from __future__ import annotations

import functools
from typing import Any

from acp import schema as s
from jsonschema import Draft202012Validator
from pydantic import BaseModel

# method -> (params model, result model), for requests either side sends.
REQUESTS: dict[str, tuple[type[BaseModel], type[BaseModel] | None]] = {
    "initialize": (s.InitializeRequest, s.InitializeResponse),
    "authenticate": (s.AuthenticateRequest, s.AuthenticateResponse),
    "session/new": (s.NewSessionRequest, s.NewSessionResponse),
    "session/load": (s.LoadSessionRequest, s.LoadSessionResponse),
    "session/list": (s.ListSessionsRequest, s.ListSessionsResponse),
    "session/resume": (s.ResumeSessionRequest, s.ResumeSessionResponse),
    "session/close": (s.CloseSessionRequest, s.CloseSessionResponse),
    "session/set_mode": (s.SetSessionModeRequest, s.SetSessionModeResponse),
    "session/set_config_option": (
        s.SetSessionConfigOptionSelectRequest,
        s.SetSessionConfigOptionResponse,
    ),
    "session/prompt": (s.PromptRequest, s.PromptResponse),
    "session/request_permission": (s.RequestPermissionRequest, s.RequestPermissionResponse),
    "fs/read_text_file": (s.ReadTextFileRequest, s.ReadTextFileResponse),
    "fs/write_text_file": (s.WriteTextFileRequest, s.WriteTextFileResponse),
}
NOTIFICATIONS: dict[str, type[BaseModel]] = {
    "session/update": s.SessionNotification,
    "session/cancel": s.CancelNotification,
}


@functools.cache
def _validator(model: type[BaseModel]) -> Draft202012Validator:
    return Draft202012Validator(model.model_json_schema(by_alias=True, mode="serialization"))


def problems(frames: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """What in ``frames`` (sender, message), in wire order, the schema does not allow."""
    found: list[str] = []
    asked: dict[tuple[str, Any], str] = {}  # (sender, id) -> method
    for sender, message in frames:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            asked[(sender, message["id"])] = method
            model = REQUESTS.get(method, (None, None))[0]
            what, data = f"{sender} {method} params", message.get("params")
        elif isinstance(method, str):
            model = NOTIFICATIONS.get(method)
            what, data = f"{sender} {method} params", message.get("params")
        else:
            other = "client" if sender == "agent" else "agent"
            method = asked.get((other, message.get("id")), "?")
            if "error" in message:
                model, what, data = s.Error, f"{sender} error for {method}", message["error"]
            else:
                model = REQUESTS.get(method, (None, None))[1]
                what, data = f"{sender} result of {method}", message.get("result")
        if model is None or method.startswith("_"):
            continue
        for error in _validator(model).iter_errors(data):
            where = "/".join(str(part) for part in error.absolute_path)
            found.append(f"{what}: {where}: {error.message[:300]}")
    return found

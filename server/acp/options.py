"""A session's config options: its mode and its model, as ACP clients offer them.

Both ways a client may choose a mode are served (``session/set_mode`` and the ``mode``
option: clients with config options prefer those). The model list is the endpoint's
(``GET /models``), fetched once in the background: a new session never waits for it,
and its sessions are told when it arrives (``config_option_update``). An endpoint that
does not list its models offers the configured one only.
"""

from __future__ import annotations

from typing import Any

from acp.schema import BaseModel, SessionConfigOptionSelect, SessionConfigSelectOption

from ..settings.modes import MODES

MODE, MODEL = "mode", "model"


def config_options(mode: str, model: str, served: list[str]) -> list[SessionConfigOptionSelect]:
    models = list(dict.fromkeys([model, *served]))
    return [
        SessionConfigOptionSelect(
            id=MODE,
            name="Mode",
            category="mode",
            type="select",
            current_value=mode,
            options=[
                SessionConfigSelectOption(value=m.id, name=m.name, description=m.description)
                for m in MODES
            ],
        ),
        SessionConfigOptionSelect(
            id=MODEL,
            name="Model",
            category="model",
            type="select",
            current_value=model,
            options=[SessionConfigSelectOption(value=name, name=name) for name in models],
        ),
    ]


# -- the unstable model selection (``models`` in session/new, ``session/set_model``) --------
# ACP's stable way is the ``model`` option above (category ``model``). Some clients still
# read the unstable ``models`` field and call ``session/set_model`` (agent-shell 0.48), which
# the SDK no longer models: the field is added to the response as the unstable schema has
# it (``SessionModelState``), so those clients get a model choice too. Both ways set the
# same thing.


def with_models(response: BaseModel, model: str, served: list[str]) -> dict[str, Any]:
    """``response`` as JSON with the unstable ``models`` field."""
    models = list(dict.fromkeys([model, *served]))
    data = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["models"] = {
        "currentModelId": model,
        "availableModels": [{"modelId": name, "name": name} for name in models],
    }
    return data

"""SPEC R5 / W8 (issue 22 item 5): `RunConfig(save_input_blobs_as_artifacts=True)`."""

from __future__ import annotations

import pytest

from rondo import Agent, Runner
from rondo.artifacts.memory import InMemoryArtifactService
from rondo.errors import ConfigurationError
from rondo.run_config import RunConfig
from rondo.testing import ScriptedModel
from rondo.types import Blob, Content, Part

PNG = b"\x89PNG\r\n\x1a\nfake"


def _message() -> Content:
    return Content(
        role="user",
        parts=[
            Part(text="what is in it?"),
            Part(inline_data=Blob(mime_type="image/png", data=PNG, display_name="my cat.png")),
        ],
    )


async def test_w8_input_blobs_are_saved_as_artifacts_and_the_model_still_sees_them() -> None:
    model = ScriptedModel(["a cat", "still a cat"])
    artifacts = InMemoryArtifactService()
    runner = Runner(agent=Agent(name="a", model=model), artifact_service=artifacts)
    config = RunConfig(save_input_blobs_as_artifacts=True)
    events = [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message=_message(), run_config=config
        )
    ]
    assert events[-1].content is not None
    # The artifact holds the bytes, under the file's (cleaned) name.
    saved = await artifacts.load_artifact(
        app_name="rondo", user_id="u", session_id="s", filename="my_cat.png"
    )
    assert saved is not None
    assert saved.inline_data is not None
    assert saved.inline_data.data == PNG
    # The stored message refers to it, and says which version; its artifact delta lists it.
    session = await runner.session_service.get_session(
        app_name="rondo", user_id="u", session_id="s"
    )
    assert session is not None
    user = session.events[0]
    assert user.content is not None
    stored = user.content.parts[1]
    assert stored.inline_data is None
    assert stored.file_data is not None
    assert stored.file_data.file_uri == "artifact://my_cat.png?version=0"
    assert stored.file_data.mime_type == "image/png"
    assert dict(user.actions.artifact_delta) == {"my_cat.png": 0}
    # The model was sent the file itself, in this turn and in the next one.
    async for _ in runner.run_async(
        user_id="u", session_id="s", new_message=Content.user("and now?"), run_config=config
    ):
        pass
    for request in model.requests:
        sent = request.contents[0].parts[1]
        assert sent.inline_data is not None
        assert sent.inline_data.data == PNG


async def test_w8_input_blobs_stay_inline_without_the_setting() -> None:
    runner = Runner(agent=Agent(name="a", model=ScriptedModel(["ok"])))
    async for _ in runner.run_async(user_id="u", session_id="s", new_message=_message()):
        pass
    session = await runner.session_service.get_session(
        app_name="rondo", user_id="u", session_id="s"
    )
    assert session is not None
    assert session.events[0].content is not None
    assert session.events[0].content.parts[1].inline_data is not None


async def test_w8_input_blobs_setting_needs_an_artifact_service() -> None:
    runner = Runner(agent=Agent(name="a", model=ScriptedModel(["ok"])))
    config = RunConfig(save_input_blobs_as_artifacts=True)
    with pytest.raises(ConfigurationError, match="artifact service"):
        async for _ in runner.run_async(
            user_id="u", session_id="s", new_message=_message(), run_config=config
        ):
            pass

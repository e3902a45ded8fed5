"""Issue 24 item 4: google-adk's eval-set routes (`/dev/apps/{app}/eval-sets...`) on rondo.

Files are where ADK keeps them: `<agents_dir>/<app>/<id>.evalset.json` and
`<agents_dir>/<app>/.adk/eval_history/<id>.evalset_result.json`; answers in camelCase.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.server._live import APPS
from tests.server.conftest import Launch


def _agents(tmp_path: Path) -> Path:
    shutil.copytree(Path(APPS) / "chat", tmp_path / "chat")
    return tmp_path


def test_24_create_list_and_file_layout(launch: Launch, tmp_path: Path) -> None:
    agents = _agents(tmp_path)
    with launch(agents_dir=agents) as http:
        assert http.get("/dev/apps/chat/eval-sets").json() == {"evalSetIds": []}
        made = http.post(
            "/dev/apps/chat/eval-sets", json={"evalSet": {"eval_set_id": "smoke", "eval_cases": []}}
        )
        assert made.status_code == 200
        body = made.json()
        assert body["eval_set_id"] == "smoke"
        assert body["name"] == "smoke"
        assert body["eval_cases"] == []
        assert isinstance(body["creation_timestamp"], float)
        stored = json.loads((agents / "chat" / "smoke.evalset.json").read_text())
        assert stored["eval_set_id"] == "smoke"  # snake_case on disk, as ADK writes it
        again = http.post(
            "/dev/apps/chat/eval-sets", json={"evalSet": {"eval_set_id": "smoke", "eval_cases": []}}
        )
        assert again.status_code == 400
        assert again.json()["detail"] == "EvalSet smoke already exists for app chat."
        bad = http.post(
            "/dev/apps/chat/eval-sets", json={"evalSet": {"eval_set_id": "a-b", "eval_cases": []}}
        )
        assert bad.status_code == 400
        assert http.post("/dev/apps/chat/eval_sets/legacy").status_code == 200
        assert http.get("/dev/apps/chat/eval-sets").json() == {"evalSetIds": ["legacy", "smoke"]}
        assert http.get("/dev/apps/chat/eval_sets").json() == ["legacy", "smoke"]


def test_24_cases_get_and_delete(launch: Launch, tmp_path: Path) -> None:
    agents = _agents(tmp_path)
    case = {
        "eval_id": "c1",
        "conversation": [{"invocation_id": "i1", "user_content": {"role": "user"}}],
        "session_input": {"app_name": "chat", "user_id": "u", "state": {"my_key": 1}},
    }
    data = {"eval_set_id": "s", "eval_cases": [case, {**case, "eval_id": "c0"}]}
    (agents / "chat" / "s.evalset.json").write_text(json.dumps(data))
    with launch(agents_dir=agents) as http:
        assert http.get("/dev/apps/chat/eval_sets/s/evals").json() == ["c0", "c1"]
        assert http.get("/dev/apps/chat/eval_sets/nope/evals").status_code == 400
        got = http.get("/dev/apps/chat/eval-sets/s/eval-cases/c1").json()
        assert got["evalId"] == "c1"
        assert got["conversation"][0]["userContent"] == {"role": "user"}
        assert got["sessionInput"]["state"] == {"my_key": 1}  # state keys kept as written
        assert http.get("/dev/apps/chat/eval-sets/s/eval-cases/zz").status_code == 404
        assert http.delete("/dev/apps/chat/eval_sets/s/evals/c0").status_code == 200
        assert http.get("/dev/apps/chat/eval_sets/s/evals").json() == ["c1"]
        assert http.delete("/dev/apps/chat/eval_sets/s/evals/c0").status_code == 404


def test_24_results_list_and_get(launch: Launch, tmp_path: Path) -> None:
    agents = _agents(tmp_path)
    history = agents / "chat" / ".adk" / "eval_history"
    history.mkdir(parents=True)
    result = {"eval_set_result_id": "r1", "eval_set_id": "s", "eval_case_results": []}
    # ADK writes the result's JSON as a JSON string.
    (history / "r1.evalset_result.json").write_text(json.dumps(json.dumps(result)))
    with launch(agents_dir=agents) as http:
        assert http.get("/dev/apps/chat/eval-results").json() == {"evalResultIds": ["r1"]}
        assert http.get("/dev/apps/chat/eval_results").json() == ["r1"]
        got = http.get("/dev/apps/chat/eval-results/r1").json()
        assert got == {"evalSetResultId": "r1", "evalSetId": "s", "evalCaseResults": []}
        assert http.get("/dev/apps/chat/eval_results/r2").status_code == 404


def test_24_case_update(launch: Launch, tmp_path: Path) -> None:
    agents = _agents(tmp_path)
    data = {"eval_set_id": "s", "eval_cases": [{"eval_id": "c1", "conversation": []}]}
    (agents / "chat" / "s.evalset.json").write_text(json.dumps(data))
    with launch(agents_dir=agents) as http:
        url = "/dev/apps/chat/eval-sets/s/eval-cases/c1"
        assert http.put(url, json={"evalId": "other", "conversation": []}).status_code == 400
        assert http.put(url, json={"conversation": [], "rubrics": []}).status_code == 200
        # With the defaults ADK's EvalCase fills in on read (its answer carries them too).
        assert http.get(url).json() == {
            "evalId": "c1",
            "conversation": [],
            "rubrics": [],
            "creationTimestamp": 0.0,
            "finalSessionState": {},
        }
        missing = "/dev/apps/chat/eval-sets/s/eval-cases/c9"
        assert http.put(missing, json={"conversation": []}).status_code == 404

"""``ralph/runStatus``'s ``model`` and ``costs`` (SPEC §15) as a real LSP client receives them
from a real server, whose run spawns a real fake agent that works and reports by its model."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.engine.conftest import FAKES
from tests.lsp.conftest import CHANGE, StartSession, wait_until

TWO_STORIES = "# Tasks\n\n## 1. One\n- [ ] 1.1 first\n\n## 2. Two\n- [ ] 2.1 second\n"


async def test_run_status_carries_the_model_and_the_runs_costs(
    start_session: StartSession, workspace: Path
) -> None:
    (workspace / "openspec/changes" / CHANGE / "tasks.md").write_text(TWO_STORIES)
    command = [sys.executable, str(FAKES / "modeled.py"), "--model", "{model}", "-p", "{prompt}"]
    s = await start_session(
        workspace,
        init={"trusted": True},
        settings={
            "agent": "custom",
            "agentCommand": command,
            "escalation": ["small", "large"],
            "escalateAfter": 1,
            "verifyWhen": "off",
        },
        env={"FAKE_ABLE_MODELS": "large", "FAKE_PRICES": "small=0.01,large=0.1"},
    )
    started = await s.command("ralph.run", {"change": CHANGE})
    await wait_until(
        lambda: any(
            st["runId"] == started["runId"] and st["state"] != "running" for st in s.statuses
        ),
        timeout=60,
        what="the run's end",
    )
    mine = [st for st in s.statuses if st["runId"] == started["runId"]]
    final = mine[-1]
    assert final["state"] == "succeeded", final["reason"]
    # while the small model works the first story, the status names it; then the large one
    models = [st["model"] for st in mine if st.get("model")]
    assert models[0] == "small" and "large" in models
    assert final["costs"] == {
        "totalUsd": final["costs"]["totalUsd"],
        "perVerifiedTaskUsd": None,  # no verification ran: no task verified nor failed
        "verifiedTasks": None,
        "tasksChecked": 2,
        "noProgressUsd": final["costs"]["noProgressUsd"],
        "noProgressIterations": 2,
        "estimated": False,
        "reviewUsd": None,  # no review round
    }
    assert abs(final["costs"]["totalUsd"] - 0.22) < 1e-9
    assert abs(final["costs"]["noProgressUsd"] - 0.02) < 1e-9
    # before the first iteration ended, there was nothing to say
    assert mine[0]["costs"] is None

"""The Services page in headless Chromium, on the local demo control plane: a step-mode task
whose hops a person approves and edits, a question answered in the inbox, and the hop DAG
drawn with the edited hop's proposal beside what ran. Screenshots go to tests/e2e/artifacts/.
"""

from __future__ import annotations

from typing import Any

from .conftest import ARTIFACTS, idle

TASK = "Get the secret fact, then a dumb fact, then ask a human to check them"
_NODES = (
    "() => window.stepwiseDag ? window.stepwiseDag.nodes.get().map(n => [n.id, n.label, n.status])"
    " : []"
)


def hop_frame(page: Any) -> Any:
    """The hop DAG component's frame."""
    for frame in page.frames:
        if "stepwise_hop_dag" in frame.url:
            return frame
    raise AssertionError(f"no hop DAG frame among {[f.url for f in page.frames]}")


def nodes(page: Any) -> list[list[str]]:
    return hop_frame(page).evaluate(_NODES)


def wait_for_nodes(page: Any, check: Any, *, within_ms: int = 20_000) -> list[list[str]]:
    waited = 0
    while waited < within_ms:
        try:
            found = nodes(page)
        except AssertionError:
            found = []
        if check(found):
            return found
        page.wait_for_timeout(250)
        waited += 250
    raise AssertionError(f"the hop DAG never showed it: {found}")


def pending_card(page: Any) -> Any:
    card = page.locator("[class*='st-key-pending-']").first
    card.wait_for(timeout=20_000)
    return card


def test_step_mode_task_approved_edited_and_answered_in_the_browser(page: Any) -> None:
    page.goto(page.url.rstrip("/") + "/services")
    page.get_by_text("Scripted demo services").wait_for(timeout=60_000)
    idle(page)
    page.get_by_label("Task", exact=True).fill(TASK)
    page.get_by_text("Step mode: pause before each hop").click()
    page.get_by_role("button", name="Create task").click()
    idle(page)

    # Hop 1: the router proposes secret_fact_agent; approve it.
    card = pending_card(page)
    card.get_by_text("secret_fact_agent").wait_for()
    card.get_by_role("button", name="Approve").click()
    idle(page)

    # Hop 2: it proposes dumb_fact_agent; edit it to go to secret_fact_agent instead.
    card = pending_card(page)
    card.get_by_text("dumb_fact_agent").wait_for(timeout=20_000)
    card.get_by_role("button", name="Edit").click()
    popover = page.get_by_test_id("stPopoverBody")
    popover.get_by_label("Service").click()
    page.get_by_role("option", name="secret_fact_agent").click()
    popover.get_by_label("Input").fill("The secret fact, please, not a dumb one.")
    page.screenshot(path=str(ARTIFACTS / "services_edit_hop.png"))
    popover.get_by_role("button", name="Send edited hop").click()
    idle(page)

    # Hop 3: a human; approve, then answer the question in the inbox.
    card = pending_card(page)
    card.get_by_text("human").first.wait_for(timeout=20_000)
    card.get_by_role("button", name="Approve").click()
    idle(page)
    answer = page.get_by_label("Your answer")
    answer.wait_for(timeout=20_000)
    answer.fill("Both are right.")
    page.get_by_role("button", name="Send answer").click()
    idle(page)

    drawn = wait_for_nodes(page, lambda found: any(n[0] == "result" for n in found))
    labels = {node[0]: node[1] for node in drawn}
    statuses = {node[0]: node[2] for node in drawn}
    proposals = [node for node in drawn if node[0].startswith("proposed:")]
    assert len(proposals) == 1 and "dumb_fact_agent" in proposals[0][1]
    edited = proposals[0][0].removeprefix("proposed:")
    assert labels[edited].startswith("2 · secret_fact_agent") and "edited" in labels[edited]
    assert any(label.startswith("3 · human: human") for label in labels.values())
    assert statuses["result"] == "completed"
    # The task's answer is the services' answers, the edit note (for the model) left out.
    page.get_by_text("Both are right.").first.wait_for()
    assert page.get_by_text("A person changed this call").count() == 0
    hop_frame(page).locator("canvas").first.scroll_into_view_if_needed()
    page.wait_for_timeout(400)
    page.screenshot(path=str(ARTIFACTS / "services_page.png"), full_page=True)
    # Nothing came from outside the app: vis-network is served by the app itself.
    assert all("localhost" in url or url.startswith(("data:", "blob:")) for url in page.requests)

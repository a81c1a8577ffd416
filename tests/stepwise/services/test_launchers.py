"""LocalLauncher runs the translated llama-agents quickstart; ServerLauncher serves it."""

from __future__ import annotations

import pytest

from agent_core.llms import ScriptedLLM
from stepwise.services import LocalLauncher, ServicesClient, TaskFailedError

from ._system import call, free_port, load_example, served

SECRET = "The secret fact is: A baby llama is called a 'Cria'."


@pytest.fixture(scope="module")
def quickstart():
    return load_example("services_quickstart")


def test_the_quickstart_answers_the_secret_fact_through_local_launcher(quickstart):
    services, control_plane, queue = quickstart.build(quickstart.scripted_llms())
    launcher = LocalLauncher(services, control_plane, queue)

    assert launcher.launch_single("What is the secret fact?") == SECRET

    secret_agent = services[0].agent
    (task,) = secret_agent.list_tasks()  # The hop is a Stepwise task, there to inspect.
    assert task.status == "completed"
    tool_steps = [o for o in secret_agent.get_completed_steps(task.task_id) if o.tool_calls]
    assert tool_steps[0].tool_calls[0].tool_name == "get_the_secret_fact"
    assert services[1].agent.list_tasks() == []  # The dumb fact agent was not asked.
    (hop,) = control_plane.state.hops(control_plane.state.list_tasks()[0].task_id)
    assert (hop.service_name, hop.result) == ("secret_fact_agent", SECRET)


def test_every_scripted_reply_is_used_and_the_orchestrator_sees_both_agents(quickstart):
    llms = quickstart.QuickstartLLMs(
        orchestrator=ScriptedLLM(
            [call("secret_fact_agent", input="What is the secret fact?"), "It is: Cria."]
        ),
        secret_agent=ScriptedLLM([call("get_the_secret_fact"), SECRET]),
        dumb_agent=ScriptedLLM([]),
    )
    services, control_plane, queue = quickstart.build(llms)

    result = LocalLauncher(services, control_plane, queue).launch_single("What is the secret fact?")

    assert result == "It is: Cria."
    assert llms.orchestrator.exhausted and llms.secret_agent.exhausted
    _, second = llms.orchestrator.requests
    assert [m.role for m in second[-2:]] == ["assistant", "tool"]
    assert second[-1].content == SECRET


def test_a_launcher_runs_one_task_after_another(quickstart):
    services, control_plane, queue = quickstart.build(quickstart.scripted_llms())
    launcher = LocalLauncher(services, control_plane, queue)

    answers = [launcher.launch_single(f"What is the secret fact? ({n})") for n in range(3)]

    assert answers == [SECRET] * 3
    assert len(control_plane.state.list_tasks()) == 3


def test_a_failed_task_raises_with_its_reason(quickstart):
    llms = quickstart.scripted_llms()
    llms.orchestrator = ScriptedLLM([call("no_such_agent", input="x")] * 3)
    services, control_plane, queue = quickstart.build(llms)

    with pytest.raises(TaskFailedError, match="no usable service"):
        LocalLauncher(services, control_plane, queue).launch_single("What is the secret fact?")


async def test_alaunch_single_runs_in_a_live_loop(quickstart):
    services, control_plane, queue = quickstart.build(quickstart.scripted_llms())

    result = await LocalLauncher(services, control_plane, queue).alaunch_single("Secret?")

    assert result == SECRET


def test_the_quickstart_takes_a_real_model_from_one_setting(quickstart, monkeypatch):
    monkeypatch.setenv("STEPWISE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")

    llms = quickstart.default_llms()

    assert type(llms.orchestrator).__name__ == "OpenAILLM"
    assert llms.secret_agent.model == "gpt-4o-mini"


def test_server_launcher_serves_the_quickstart_to_a_client(quickstart):
    services, control_plane, queue = quickstart.build(quickstart.scripted_llms(), port=free_port())
    with served(services, control_plane, queue) as url, ServicesClient(url) as client:
        task_id = client.create_task("What is the secret fact?")
        result = client.wait_for_result(task_id, timeout=20)

        assert result.result == SECRET
        assert {s.service_name for s in client.list_services()} == {
            "secret_fact_agent",
            "dumb_fact_agent",
        }
        assert [t.task_id for t in client.list_tasks()] == [task_id]

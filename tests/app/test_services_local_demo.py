"""The Services page's local demo plays the quickstart example's agents from the package."""

from __future__ import annotations

import asyncio

from agent_core.llms import ChatMessage
from agent_core.store import InMemoryStore
from stepwise.app.components import services_local
from stepwise.services import SimpleMessageQueue
from tests.stepwise.services._system import load_example


def test_the_demo_agents_answer_as_the_quickstart_examples_scripted_models():
    example = load_example("services_quickstart")
    models = example.scripted_llms()
    question = [ChatMessage(role="user", content="What is the secret fact?")]

    dumb = asyncio.run(models.dumb_agent.chat(question))
    assert services_local.DUMB_FACT == dumb.text
    assert services_local.get_the_secret_fact() == example.get_the_secret_fact()

    secret, dumb_service, human = services_local.demo_services(
        SimpleMessageQueue(), InMemoryStore()
    )
    # The scripted model calls the tool, then answers with what it said.
    assert str(secret.agent.chat("What is the secret fact?")) == example.get_the_secret_fact()
    assert (dumb_service.service_name, human.service_name) == ("dumb_fact_agent", "human")

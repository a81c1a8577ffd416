"""Playground: one stateless agent step at a time, by hand ("Try it!" for the Execute API)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.execute import DEFAULT_INSTRUCTIONS, execute_sync
from agent_core.llms.catalog import PROVIDERS
from agent_core.spec import AgentSpec
from stepwise.app.components import playground as pg
from stepwise.app.components import runtime, state
from stepwise.app.components.actions import show_message
from stepwise.app.components.messages import plain

_TOOLS = "playground-tools"
_MODEL = "playground-model"
_DEMO = "The scripted demo model"


def _model_choice() -> tuple[AgentSpec, dict[str, Any]]:
    """The model picked: the one in Settings, or the scripted demo; and its API `model`."""
    spec = state.agent_spec()
    options = [_DEMO]
    if PROVIDERS[spec.provider].takes_model:  # The demo is offered anyway; no typed replies.
        options.insert(0, f"The model in Settings: {spec.provider} {spec.model_name}")
    picked = st.radio("Model", options, key=_MODEL, horizontal=True)
    if picked == _DEMO:
        demo = AgentSpec()
        return demo, {"provider": demo.provider, "name": demo.model_name}
    return spec, {"provider": spec.provider, "name": spec.model_name}


def _tools_editor() -> list:
    if st.button("Use the built-in arithmetic tools"):
        st.session_state[_TOOLS] = pg.tool_presets()
    text = st.text_area(
        "Tools (a JSON list of {name, description, parameters})",
        key=_TOOLS,
        height=160,
        placeholder='[{"name": "add", "description": "Add two numbers.", "parameters": '
        '{"type": "object", "properties": {"a": {"type": "number"}}}}]',
    )
    tools, problem = pg.parse_tools(text or "")
    if problem:
        st.error(problem + " Fix the Tools box, then press Execute.")
    return tools


_AVATARS = {  # name, avatar: each role its own look.
    "agent": ("assistant", None),
    "tool": ("tool", ":material/build:"),
    "user": ("user", None),
    "system": ("system", ":material/info:"),
}


def _show_conversation(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        role = message["role"]
        name, avatar = _AVATARS[role]
        with st.chat_message(name, avatar=avatar):
            if role == "agent" and message.get("tool_requests"):
                for request in message["tool_requests"]:
                    args = json.dumps(request["arguments"], ensure_ascii=False)
                    st.markdown(f"**agent asks for** {plain(request['name'])}({plain(args)})")
            elif role == "tool":
                st.markdown(f"**tool output** ({plain(message['tool_request_id'])})")
                st.markdown(plain(message["content"]))
            else:
                st.markdown(f"**{role}**")
                st.markdown(plain(message.get("content") or ""))


def _answer_tool_requests(requests: list[dict[str, Any]]) -> None:
    st.subheader("Run the tools the agent asked for")
    runnable = pg.builtin_tools()
    outputs: dict[str, str] = {}
    for request in requests:
        key = f"playground-output-{request['id']}"
        args = json.dumps(request["arguments"], ensure_ascii=False)
        tool = runnable.get(request["name"])
        if tool is not None and st.button(f"Run {request['name']}({args}) here", key=f"{key}-run"):
            # Pure built-ins: a loop of their own is fine (no client is kept across loops).
            st.session_state[key] = asyncio.run(tool.acall(request["arguments"])).content
        outputs[request["id"]] = st.text_input(f"Output of {request['name']}({args})", key=key)
    missing = [r["name"] for r in requests if not outputs[r["id"]].strip()]
    if st.button("Send the tool outputs", type="primary", disabled=bool(missing)):
        pg.append(*(pg.tool_turn(r["id"], outputs[r["id"]]) for r in requests))
        st.rerun()
    if missing:
        st.caption("Type an output for each request (or run it here), then Send the tool outputs.")


def _add_message() -> None:
    with st.form("playground-add", clear_on_submit=True):
        role = st.selectbox("Role", ["user", "system"], help="system: guidance, not the user")
        content = st.text_area("Message", height=80)
        if st.form_submit_button("Add the message") and content.strip():
            pg.append({"role": role, "content": content})
            st.rerun()


def _execute(spec: AgentSpec, model: dict[str, Any], request: dict[str, Any]) -> None:
    try:
        llm = runtime.model_for(spec)
        protocol = "react" if model["provider"] == "demo" else "native"
        result = execute_sync(pg.to_execute_request(request), llm, default_protocol=protocol)
    except AgentCoreError as exc:
        show_message("error", exc, headline="The step did not run.")
        return
    scripted = {**model, "scripted": model["provider"] == "demo"}
    pg.set_last_result(request, pg.response_json(result, scripted))
    pg.append(pg.agent_turn(result.message))
    st.rerun()


def _show_exchange() -> None:
    exchange = pg.last_result()
    if exchange is None:
        return
    sent, got = exchange
    with st.expander("The last request and response, as JSON"):
        st.caption("Request")
        st.code(json.dumps(sent, indent=2, ensure_ascii=False), language="json")
        st.caption("Response")
        st.code(json.dumps(got, indent=2, ensure_ascii=False), language="json")
        st.caption("The same request against `stepwise serve`")
        st.code(pg.curl_command(sent), language="bash")


def render() -> None:
    """Draw the Playground page."""
    st.header("Playground")
    st.caption(
        "One stateless agent step at a time, as `POST /v1/agent/execute` runs it: you keep the "
        "conversation and run the tools; nothing is stored. The scripted demo model knows only "
        "the demo questions (try: What is (121 * 3) + 42? with the built-in arithmetic tools)."
    )
    spec, model = _model_choice()
    instructions = st.text_area(
        "Instructions (optional)", placeholder=DEFAULT_INSTRUCTIONS, height=70
    )
    tools = _tools_editor()
    messages = pg.conversation()
    _show_conversation(messages)
    pending = pg.open_requests(messages)
    if pending:
        _answer_tool_requests(pending)
    else:
        _add_message()
    left, right = st.columns(2)
    can_run = bool(messages) and not pending and messages[-1]["role"] != "agent"
    if left.button("Execute", type="primary", disabled=not can_run, help="Run one agent step"):
        _execute(spec, model, pg.build_request(tools, instructions or "", model))
    if right.button("New conversation", disabled=not messages):
        pg.clear()
        st.rerun()
    if not can_run and messages and not pending:
        st.caption("The agent answered: add a message to go on, or start a New conversation.")
    _show_exchange()

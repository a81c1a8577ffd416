"""Anchor frameworks for the runner-overhead benchmark (LlamaIndex and LangGraph).

Each module runs the same scripted ReAct trajectory (one `add` tool, K tool rounds, then an
answer, on a zero-latency scripted model) and exposes `FRAMEWORK`, `VERSION` and
`run_task(k) -> nanoseconds`. They need the separate bench env (`bench/anchors/requirements.txt`
in `bench/.venv`), never the app's venv; `run_anchor.py` is the command line.
"""

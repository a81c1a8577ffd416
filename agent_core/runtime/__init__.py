"""The core loop: the runner and what one step is made of.

`runner.py` (the `AgentRunner`) drives a task; `transaction.py` runs one step (claim, the
worker on a staged view, then commit, fail or release); `queue.py`, `undo.py`, `claims.py`
and `worker_state.py` are its parts; `loop.py` is the runtime thread every caller hands its
work to; `contracts.py` is all the runner needs of a worker. Public names are re-exported by
`agent_core`; this package imports nothing at import time so that its modules can be loaded
one by one.
"""

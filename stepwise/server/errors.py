"""Moved to `stepwise.http.errors`, which both HTTP APIs share (see `agent_core._moved`)."""

import sys

from agent_core._moved import stand_in

sys.modules[__name__] = stand_in(__name__)

"""Moved; an alias that warns, for one release (the table: `agent_core._moved._MOVED`)."""

import sys

from agent_core._moved import stand_in

sys.modules[__name__] = stand_in(__name__)

"""Moved to `stepwise.app.components`, the app's own root; an alias that warns, for one release.

Nothing of Stepwise's imports this name any more, so a project's own `components` package is
its own in the app (the table: `agent_core._moved._MOVED`).
"""

import sys

from agent_core._moved import stand_in

sys.modules[__name__] = stand_in(__name__)

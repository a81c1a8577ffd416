"""Moved to `stepwise.cli`; this name stays importable, with a warning, until Stepwise 0.3."""

import sys

from agent_core._moved import alias_package

sys.modules[__name__] = alias_package(__name__, "stepwise.cli")

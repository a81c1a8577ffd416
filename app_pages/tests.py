"""Tests: the cases in stepwise_cases/, replayed on the current code, one or all.

The page ships in the package (`stepwise.app.views.tests`); this file runs it for `make run`.
"""

from stepwise.app.views.tests import render

render()

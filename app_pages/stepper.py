"""Stepper: run a task one step at a time, steer it, undo it, and watch its DAG grow.

The page ships in the package (`stepwise.app.views.stepper`); this file runs it for `make run`.
"""

from stepwise.app.views.stepper import render

render()

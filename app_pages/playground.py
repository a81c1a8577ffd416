"""Playground: one stateless agent step at a time, by hand ("Try it!" for the Execute API).

The page ships in the package (`stepwise.app.views.playground`); this file runs it for `make run`.
"""

from stepwise.app.views.playground import render

render()

"""What your tests import from Stepwise: pytest suites and helpers, above every other layer.

- `agent_core.testing.stores`: the store conformance suite, every test a `Store` must pass
  (subclass `StoreConformance`, give it a harness). It drives a store through a runner, a
  worker and tools as a user's tests do, which is why it lives here and not in `store`.

Needs pytest; nothing in the runtime imports this package.
"""

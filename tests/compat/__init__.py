"""LlamaIndex 0.12's own unit tests for its lower-level agent API, ported to Stepwise.

Each file names the LlamaIndex test it came from; every change is marked `# stepwise:`.
"""

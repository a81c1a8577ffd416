"""The root conftest must stop any call that leaves this machine."""

import socket

import pytest


def test_a_remote_connection_fails_the_test():
    with pytest.raises(AssertionError, match="never use the network"):
        socket.create_connection(("api.openai.com", 443), timeout=1)


def test_provider_keys_are_not_visible(monkeypatch):
    import os

    assert "OPENAI_API_KEY" not in os.environ
    assert "ANTHROPIC_API_KEY" not in os.environ


def test_loopback_stays_allowed():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=1)
    client.close()
    server.close()

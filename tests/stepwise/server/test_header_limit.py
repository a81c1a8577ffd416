"""The request head limit is the documented 32 KiB, on a real uvicorn listening as `serve` does.

h11's own bound counted only a head still arriving: a head that came whole in one 64 KiB read
passed, so up to ~100 KiB of headers were served. Over the limit is a 431 with a JSON error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stepwise.http.listening import MAX_HEADER_BYTES, MAX_HEADER_COUNT, uvicorn_options
from stepwise.server import ServerSettings

from .conftest import running_server

KIB = 1024


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`create_app` on uvicorn with `stepwise serve`'s listening options."""
    folder = tmp_path_factory.mktemp("heads")
    settings = ServerSettings(db=folder / "runs.db", token=None)
    with running_server(settings, **uvicorn_options()) as served:
        yield served


def _get(url: str, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=10) as client:  # A fresh connection: a refusal closes it.
        return client.get(f"{url}/health", headers=headers)


def _padded(total: int) -> dict[str, str]:
    """Headers making the request's head about `total` bytes, in 1 KiB fields."""
    return {f"x-pad-{i}": "a" * (KIB - 16) for i in range(total // KIB)}


def test_the_documented_limit_is_32_kib() -> None:
    assert MAX_HEADER_BYTES == 32 * KIB
    manual = (Path(__file__).parents[3] / "docs" / "http.md").read_text(encoding="utf-8")
    assert "(32 KiB, 100 fields)" in manual


def test_31_kib_of_headers_pass(url: str) -> None:
    assert _get(url, _padded(31 * KIB)).status_code == 200
    assert _get(url, {"x-one": "a" * (31 * KIB)}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [_padded(33 * KIB), {"x-one": "a" * (33 * KIB)}, _padded(90 * KIB)],
    ids=["33-fields-of-1-kib", "one-33-kib-field", "90-kib"],
)
def test_33_kib_and_more_are_refused_with_431_and_a_json_error(
    url: str, headers: dict[str, str]
) -> None:
    refused = _get(url, headers)
    assert refused.status_code == 431
    error = refused.json()["error"]
    assert error["code"] == "request_headers_too_large"
    assert "32 KiB" in error["message"]
    assert _get(url, {}).status_code == 200  # The server goes on.


def test_too_many_fields_are_refused_with_431(url: str) -> None:
    headers = {f"x-f-{i}": "1" for i in range(MAX_HEADER_COUNT + 1)}
    refused = _get(url, headers)
    assert refused.status_code == 431
    assert refused.json()["error"]["code"] == "request_headers_too_large"

"""A loopback OpenAI-compatible model that answers every chat call after a fixed delay.

An asyncio server (uvicorn), so that at 1,000 calls/s the model is not the bottleneck of the
measurement: run as `python -m bench._model_server PORT DELAY_MS`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import uvicorn

_REPLY = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "model": "bench-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The answer is 405."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
}


def make_app(delay_s: float):
    """The ASGI app: POST /v1/chat/completions answers `_REPLY` after `delay_s`."""

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await asyncio.sleep(delay_s)
        data = json.dumps({**_REPLY, "created": int(time.time())}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app


if __name__ == "__main__":
    port, delay_ms = int(sys.argv[1]), float(sys.argv[2])
    uvicorn.run(make_app(delay_ms / 1000), host="127.0.0.1", port=port, log_level="warning")

"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests that need a real LLM
round trip through LiteLLM (``oam mcp --llm openai/... --llm-api-base``): it answers
extraction prompts with scripted memories and records every request."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[str], str]


def extraction_reply(*texts: str) -> Reply:
    """Answer every extraction prompt with one fact per text; summaries get a fixed one."""

    def reply(prompt: str) -> str:
        if "running summary" in prompt:
            return json.dumps({"summary": "Pets.", "topics": ["pets"]})
        items = [
            {"text": t, "record_type": "fact", "timestamp": None, "supersedes": []} for t in texts
        ]
        return json.dumps({"memories": items})

    return reply


@contextmanager
def fake_openai(reply: Reply, status: int = 200) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``/v1/chat/completions``; yield ``(api_base, requests)``. With a
    ``status`` other than 200 every request is refused with it, ``reply(prompt)``
    the error message (OpenAI's ``{"error": {"message": ...}}`` body)."""
    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            requests.append(body)
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            answer: dict[str, Any] = {
                "id": f"chatcmpl-{len(requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply(prompt)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
            }
            if status != 200:
                answer = {"error": {"message": reply(prompt), "type": "invalid_request_error"}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)

"""The HTTP API as a WSGI application over a TaskStore."""

import json
import re
from typing import Callable, Iterable, List, Optional, Tuple
from urllib.parse import parse_qs

from todo.store import TaskNotFound, TaskStore

Response = Tuple[int, Optional[object]]

_TASK = re.compile(r"^/tasks/(\d+)$")
_COMPLETE = re.compile(r"^/tasks/(\d+)/complete$")

_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


def handle(store: TaskStore, method: str, path: str, query: str = "", body: bytes = b"") -> Response:
    """Routes one request; returns (status, JSON-serialisable body or None)."""
    if path == "/tasks":
        if method == "GET":
            params = parse_qs(query)
            done = None
            if "done" in params:
                done = params["done"][0].lower() == "true"
            return 200, [t.to_dict() for t in store.list(done=done)]
        if method == "POST":
            try:
                payload = json.loads(body or b"{}")
                task = store.add(str(payload.get("title", "")))
            except (ValueError, AttributeError) as e:
                return 400, {"error": str(e)}
            return 201, task.to_dict()
        return 405, {"error": "method not allowed"}
    m = _COMPLETE.match(path)
    if m and method == "POST":
        return _with_task(lambda: store.complete(int(m.group(1))).to_dict())
    m = _TASK.match(path)
    if m:
        task_id = int(m.group(1))
        if method == "GET":
            return _with_task(lambda: store.get(task_id).to_dict())
        if method == "DELETE":
            status, body_ = _with_task(lambda: store.delete(task_id))
            return (204, None) if status == 200 else (status, body_)
    return 404, {"error": "not found"}


def _with_task(action: Callable[[], object]) -> Response:
    try:
        return 200, action()
    except TaskNotFound as e:
        return 404, {"error": f"task {e.args[0]} not found"}


def make_app(store: Optional[TaskStore] = None) -> Callable:
    store = store or TaskStore()

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        status, payload = handle(store, environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/"), environ.get("QUERY_STRING", ""), body)
        data = b"" if payload is None else json.dumps(payload).encode()
        headers: List[Tuple[str, str]] = [("Content-Type", "application/json")] if data else []
        start_response(f"{status} {_REASONS.get(status, '')}", headers)
        return [data]

    return app

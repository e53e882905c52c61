import json
import unittest

from todo.api import handle
from todo.store import TaskStore


class ApiTest(unittest.TestCase):
    def setUp(self) -> None:
        self.store = TaskStore()

    def post(self, path: str, payload: dict):
        return handle(self.store, "POST", path, body=json.dumps(payload).encode())

    def test_create_and_list(self) -> None:
        status, task = self.post("/tasks", {"title": "buy milk"})
        self.assertEqual(status, 201)
        self.assertEqual(task, {"id": 1, "title": "buy milk", "done": False})
        self.assertEqual(handle(self.store, "GET", "/tasks"), (200, [task]))

    def test_create_rejects_empty_title(self) -> None:
        status, _ = self.post("/tasks", {"title": ""})
        self.assertEqual(status, 400)

    def test_complete_and_filter(self) -> None:
        self.post("/tasks", {"title": "a"})
        self.post("/tasks", {"title": "b"})
        self.assertEqual(handle(self.store, "POST", "/tasks/2/complete")[0], 200)
        status, done = handle(self.store, "GET", "/tasks", query="done=true")
        self.assertEqual((status, [t["title"] for t in done]), (200, ["b"]))

    def test_delete_and_not_found(self) -> None:
        self.post("/tasks", {"title": "a"})
        self.assertEqual(handle(self.store, "DELETE", "/tasks/1"), (204, None))
        self.assertEqual(handle(self.store, "GET", "/tasks/1")[0], 404)


if __name__ == "__main__":
    unittest.main()

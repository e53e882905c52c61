import unittest

from todo.store import TaskNotFound, TaskStore


class TaskStoreTest(unittest.TestCase):
    def setUp(self) -> None:
        self.store = TaskStore()

    def test_add_assigns_ids_and_trims(self) -> None:
        a = self.store.add("  write docs ")
        b = self.store.add("ship")
        self.assertEqual((a.id, a.title), (1, "write docs"))
        self.assertEqual(b.id, 2)

    def test_empty_title_is_rejected(self) -> None:
        with self.assertRaises(ValueError):
            self.store.add("   ")

    def test_list_filters_by_done(self) -> None:
        self.store.add("a")
        b = self.store.add("b")
        self.store.complete(b.id)
        self.assertEqual([t.title for t in self.store.list(done=True)], ["b"])
        self.assertEqual([t.title for t in self.store.list(done=False)], ["a"])

    def test_missing_task(self) -> None:
        with self.assertRaises(TaskNotFound):
            self.store.get(42)
        with self.assertRaises(TaskNotFound):
            self.store.delete(42)


if __name__ == "__main__":
    unittest.main()

"""An in-memory task store."""

from typing import Dict, List, Optional

from todo.models import Task


class TaskNotFound(KeyError):
    """No task has the requested id."""


class TaskStore:
    def __init__(self) -> None:
        self._tasks: Dict[int, Task] = {}
        self._next_id = 1

    def add(self, title: str) -> Task:
        title = title.strip()
        if not title:
            raise ValueError("title must not be empty")
        task = Task(id=self._next_id, title=title)
        self._tasks[task.id] = task
        self._next_id += 1
        return task

    def get(self, task_id: int) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise TaskNotFound(task_id) from None

    def list(self, done: Optional[bool] = None) -> List[Task]:
        tasks = sorted(self._tasks.values(), key=lambda t: t.id)
        if done is not None:
            tasks = [t for t in tasks if t.done == done]
        return tasks

    def complete(self, task_id: int) -> Task:
        task = self.get(task_id)
        task.done = True
        return task

    def delete(self, task_id: int) -> None:
        self.get(task_id)
        del self._tasks[task_id]

"""A tiny task-list API: models, an in-memory store and a WSGI app."""

from todo.models import Task
from todo.store import TaskNotFound, TaskStore

__all__ = ["Task", "TaskNotFound", "TaskStore"]

"""The dag40 bench's DAG run by LangGraph, for comparison with dandori's runner.

The same 40 steps (8 levels of 5, each step after two steps of the level above),
as a LangGraph StateGraph whose node for a step waits `latency` (the agent),
writes `src/<step>.txt` in the repository's checkout and commits it on a work
branch (`git add` + `git commit`, under one lock: the usual git-committing loop
of a LangGraph coding agent, all steps in the one checkout). `max_concurrency`
is the number of workers.

usage: python langgraph_dag40.py REPO LATENCY_MS WORKERS
Prints one JSON line: wall seconds of the graph's run, and the CPU seconds of
this process and of the git processes it waited for, over the same interval.
"""

import json
import operator
import os
import resource
import subprocess
import sys
import threading
import time
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

LEVELS, WIDTH = 8, 5


class State(TypedDict):
    done: Annotated[list, operator.add]


def step_id(level, w):
    return f"S{level * WIDTH + w + 1:02d}"


def main():
    repo, latency, workers = sys.argv[1], int(sys.argv[2]) / 1000.0, int(sys.argv[3])
    lock = threading.Lock()

    def git(*args):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    def node(sid):
        def run(_state):
            time.sleep(latency)
            path = os.path.join(repo, "src", f"{sid}.txt")
            with lock:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(sid)
                git("add", "--", f"src/{sid}.txt")
                git("commit", "-q", "-m", f"step {sid}")
            return {"done": [sid]}

        return run

    graph = StateGraph(State)
    for level in range(LEVELS):
        for w in range(WIDTH):
            sid = step_id(level, w)
            graph.add_node(sid, node(sid))
            if level == 0:
                graph.add_edge(START, sid)
            else:
                preds = [step_id(level - 1, p) for p in (w, (w + 1) % WIDTH)]
                graph.add_edge(preds, sid)
            if level == LEVELS - 1:
                graph.add_edge(sid, END)
    app = graph.compile()

    git("checkout", "-q", "-b", "langgraph/bench")

    def cpu():
        s = resource.getrusage(resource.RUSAGE_SELF)
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime

    cpu0, t0 = cpu(), time.monotonic()
    out = app.invoke({"done": []}, config={"max_concurrency": workers})
    wall, cpu1 = time.monotonic() - t0, cpu()
    assert len(out["done"]) == LEVELS * WIDTH, out
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_self_s": cpu1[0] - cpu0[0],
                "cpu_children_s": cpu1[1] - cpu0[1],
                "steps": len(out["done"]),
            }
        )
    )


if __name__ == "__main__":
    main()

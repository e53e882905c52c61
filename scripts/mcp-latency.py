#!/usr/bin/env python3
"""Measures `dandori mcp`: start time (spawn -> initialize answered), warm tool-call
latency, and the tools/list size of each tool set. Raw JSON-RPC over stdio, no SDK,
so the client adds as little as possible.

    python3 scripts/mcp-latency.py [path/to/dandori] [--calls N]

It plans examples/todo-api into a temporary copy (offline planner) and calls the
read tools on that run. Results go to stdout as JSON; docs/mcp.md records them.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else os.path.join(ROOT, "target/debug/dandori")
CALLS = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 50


def rpc(proc, msg_id, method, params):
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("server closed stdout")
        msg = json.loads(line)
        if msg.get("id") == msg_id:
            return msg


def start(cwd, tools):
    t0 = time.perf_counter()
    proc = subprocess.Popen([BIN, "mcp", "--tools", tools], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    rpc(proc, 0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "latency", "version": "0"}})
    started = time.perf_counter() - t0
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.flush()
    return proc, started


def main():
    work = tempfile.mkdtemp()
    repo = os.path.join(work, "todo-api")
    shutil.copytree(os.path.join(ROOT, "examples/todo-api"), repo, ignore=shutil.ignore_patterns(".dandori"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    out = subprocess.run([BIN, "plan", "requests/RQ-001.md", "--repo", ".", "--json"], cwd=repo,
                         check=True, capture_output=True, text=True)
    run_dir = json.loads(out.stdout)["run_dir"]
    result = {"binary": BIN, "sets": {}}
    for tools in ("core", "standard", "all"):
        proc, started = start(repo, tools)
        listed = rpc(proc, 1, "tools/list", {})["result"]["tools"]
        result["sets"][tools] = {
            "tools": len(listed),
            "schema_chars": sum(len(json.dumps(t, separators=(",", ":"), ensure_ascii=False)) for t in listed),
        }
        proc.stdin.close()
        proc.wait()
    starts = []
    for _ in range(10):
        proc, started = start(repo, "all")
        starts.append(started)
        proc.stdin.close()
        proc.wait()
    result["start_ms"] = {"median": round(statistics.median(starts) * 1000, 1), "max": round(max(starts) * 1000, 1)}
    proc, _ = start(repo, "all")
    calls = {
        "graph": {"path": run_dir},
        "validate": {"path": run_dir},
        "status": {"run_dir": run_dir},
        "step": {"run_dir": run_dir, "step_id": "S01"},
        "report": {"run_dir": run_dir},
    }
    result["warm_call_ms"] = {}
    msg_id = 10
    for name, args in calls.items():
        times = []
        for _ in range(CALLS):
            msg_id += 1
            t0 = time.perf_counter()
            r = rpc(proc, msg_id, "tools/call", {"name": name, "arguments": args})
            times.append(time.perf_counter() - t0)
            assert not r["result"].get("isError"), r
        times.sort()
        result["warm_call_ms"][name] = {"median": round(statistics.median(times) * 1000, 2),
                                        "p95": round(times[int(len(times) * 0.95) - 1] * 1000, 2)}
    proc.stdin.close()
    proc.wait()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))


main()

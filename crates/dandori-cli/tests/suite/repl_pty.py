"""Drives `dandori repl` through a real pseudo-terminal (stdlib `pty`).

argv: BINARY REPO STEPS_JSON. STEPS is a list of [send, expect]: `send` is
written to the terminal as keystrokes, then the output is read until `expect`
appears after what earlier steps matched. The whole transcript goes to stdout;
exit 1 with the transcript on a timeout; the REPL's exit status is printed last
as `EXIT <n>`.
"""
import json
import os
import pty
import select
import sys
import time

binary, repo, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
pid, fd = pty.fork()
if pid == 0:
    os.chdir(repo)
    os.execv(binary, [binary, "repl"])

out = b""
cursor = 0


def read_some(deadline):
    global out
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        out += data
    return time.time() < deadline


for send, expect in steps:
    for ch in send:
        os.write(fd, ch.encode())
        time.sleep(0.02)
    deadline = time.time() + 60
    token = expect.encode()
    while True:
        i = out.find(token, cursor)
        if i >= 0:
            cursor = i + len(token)
            break
        if not read_some(deadline):
            sys.stdout.write(out.decode("utf-8", "replace"))
            sys.stdout.write("\nTIMEOUT waiting for %r after %r\n" % (expect, send))
            sys.exit(1)

deadline = time.time() + 30
while read_some(deadline):
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.stdout.write("\nEXIT %d\n" % os.waitstatus_to_exitcode(status))

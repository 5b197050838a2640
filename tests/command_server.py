"""A fork server for the tests that run many ``ragassay`` commands in bash (the README's pages, the
step-by-step chain, the chain on real text): each command costs a fresh interpreter about a second of
CPU before it does anything, most of it importing openai, pydantic and numpy. Here one server process
imports those once; a ``ragassay`` on the PATH of the commands is a small client that hands the server
its arguments, working directory, environment and its own stdin, stdout and stderr (the descriptors
themselves, over a Unix socket), and the server forks a child that runs the command's entry point,
``ragassay.cli.main``, exactly as the installed script does, in that directory and environment,
writing to those descriptors. The client exits as the child did, with its code or by its signal, and
passes on the SIGINT, SIGTERM and SIGHUP it receives.

Only third-party packages are imported ahead (their import reads nothing the tests vary), never
ragassay's own modules: each command imports those itself, from the same installation the script
would (the server runs under that environment's Python). What an interpreter settles as it starts
(``sys.path`` from PYTHONPATH, -X options) is the server's: the tests give their commands the
environment the server started with, apart from variables read as a command runs (the endpoint, the
model, the cache folder). A client that cannot reach its server runs
the real script instead. tests/integration/test_command_server.py checks that a command run through
the client says, writes and exits as the real script does.

Run as ``python command_server.py SOCKET`` it serves until it is terminated; it prints one line,
``ready``, once it listens."""

from __future__ import annotations

import atexit
import importlib
import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

# What a command imports that costs most and that no test changes between commands (numpy reads its
# threading variables as it loads, and no test sets them): openai alone is about 1 s of CPU.
PRELOAD = ("openai", "pydantic", "numpy", "httpx", "aiohttp", "tenacity", "jsonlines")

CLIENT = """#!{python} -S
# A ragassay command run by the test suite's command server (tests/command_server.py).
import json, os, signal, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect({socket_path!r})
except OSError:  # no server: the real script
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
data = json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(s, [struct.pack("!I", len(data)) + data], [0, 1, 2])
for n in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(n, lambda n, frame: s.sendall(b"%d\\n" % n))
reply = b""
while not reply.endswith(b"\\n"):
    try:
        chunk = s.recv(64)
    except InterruptedError:
        continue
    if not chunk:
        sys.exit("ragassay (test command server): the server closed the connection without an exit status")
    reply += chunk
code = int(reply)
if code < 0:
    if -code not in (signal.SIGKILL, signal.SIGSTOP):  # (their handlers cannot be set)
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The command's header (argv, cwd, env) and its three descriptors."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    (size,) = struct.unpack("!I", data[:4])
    body = data[4:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise EOFError("the client went away")
        body += more
    return json.loads(body), fds


def _stdio() -> None:
    """Standard streams made for the descriptors 0, 1 and 2 as an interpreter starting on them makes
    them: stdout line-buffered only on a terminal, stderr always line-buffered with backslash escapes."""
    encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
    sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=encoding)
    sys.stdout = io.TextIOWrapper(
        open(1, "wb", closefd=False), encoding=encoding, line_buffering=os.isatty(1), write_through=False
    )
    sys.stderr = io.TextIOWrapper(
        open(2, "wb", closefd=False), encoding=encoding, errors="backslashreplace", line_buffering=True
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _run(header: dict, fds: list[int]) -> None:
    """In the forked child: become the command, run the entry point the script runs, and exit as it would."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(header["cwd"])
    os.environ.clear()
    os.environ.update(header["env"])
    sys.argv = [REAL, *header["argv"][1:]]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for n in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(n, signal.SIG_DFL)
    _stdio()
    from ragassay.cli import main

    try:
        code = main()
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        traceback.print_exc()
        _leave(1, signal.SIGINT)
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):  # what sys.exit("message") does
        print(code, file=sys.stderr)
        code = 1
    _leave(code or 0)


def _leave(code: int, by: int = 0) -> None:
    """End as the interpreter ends a script (the atexit functions, then the streams flushed) without
    tearing down every module the server imported, which would take longer than most commands: the
    exit code, or the signal ``by``."""
    shutdown = getattr(threading, "_shutdown", None)  # the non-daemon threads, joined as at any exit
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if by:
        signal.signal(by, signal.SIG_DFL)
        os.kill(os.getpid(), by)
    os._exit(code & 0xFF)


def _manage(conn: socket.socket) -> None:
    """In a child of the server: fork the command, pass on the signals the client sends, and send the
    client the command's exit status (a negative number: the signal that ended it)."""
    header, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run(header, fds)
    for fd in fds:
        os.close(fd)
    ended = os.pidfd_open(pid)
    pending = b""
    while True:
        ready, _, _ = select.select([conn, ended], [], [])
        if ended in ready:
            break
        chunk = conn.recv(64)
        if not chunk:  # the client is gone: so is the command
            os.kill(pid, signal.SIGKILL)
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            os.kill(pid, int(line))
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
    except OSError:
        pass
    os._exit(0)


REAL = ""  # the script the client stands in for


def serve(path: str, real: str) -> None:
    """Listen at ``path`` for the clients of ``real``: the interpreter looks for modules first in the
    script's folder, as it does when it runs the script, not in this file's."""
    global REAL
    REAL = real
    sys.path[0] = str(Path(real).parent)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the managers are reaped as they end
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _manage(conn)
        conn.close()


def serving(env: dict[str, str]) -> CommandServer | None:
    """A server for the ``ragassay`` that ``env``'s PATH finds, under the interpreter its first line
    names; None when there is none (the commands then fail as they would have)."""
    real = shutil.which("ragassay", path=env.get("PATH"))
    if real is None:
        return None
    first = Path(real).read_bytes().split(b"\n", 1)[0]
    if not first.startswith(b"#!") or b"python" not in first:
        return None
    return CommandServer(first[2:].decode().strip().split()[0], real, env)


class CommandServer:
    """A server started under ``python`` (the environment whose ``ragassay`` it stands in for) with
    ``env``; ``bin_dir`` holds the client, named ``ragassay``: put it first on a command's PATH."""

    def __init__(self, python: str | Path, real: str | Path, env: dict[str, str]):
        self.dir = Path(tempfile.mkdtemp(prefix="ragassay-commands-"))
        self.bin_dir = self.dir / "bin"
        self.bin_dir.mkdir()
        socket_path = str(self.dir / "s")
        self.proc = subprocess.Popen(
            [str(python), __file__, socket_path, str(real)],
            env=env,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n", (
            "the command server did not start"
        )
        client = self.bin_dir / "ragassay"
        client.write_text(CLIENT.format(python=sys.executable, socket_path=socket_path, real=str(real)))
        client.chmod(0o755)

    def path(self, env: dict[str, str]) -> str:
        """``env``'s PATH with the client first."""
        return f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> CommandServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])

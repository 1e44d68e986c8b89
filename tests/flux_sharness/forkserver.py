"""One process that has imported fairledger's CLI and forks a child per `flux account` call.

Importing the CLI costs most of a second; flux-accounting's suite makes thousands of calls. The
shim sends its argv, environment, working directory and its stdin/stdout/stderr over a Unix
socket; the child takes them as its own, runs the command and sends back the exit code. The
parent never opens a ledger, so every child starts from the same clean state.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Sequence

SERVER_ENV = "FAIRLEDGER_SHIM_SERVER"
_HEADER = struct.Struct("!I")
_CODE = struct.Struct("!i")


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the shim went away")
        data += chunk
    return data


def call(address: str, argv: Sequence[str]) -> int:
    """The shim's side: run `argv` (fairledger's) in a forked child with this process's files."""
    request = json.dumps({"argv": list(argv), "env": dict(os.environ), "cwd": os.getcwd()})
    payload = request.encode("utf-8", "surrogateescape")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(address)
        socket.send_fds(conn, [_HEADER.pack(len(payload))], [0, 1, 2])
        conn.sendall(payload)
        (code,) = _CODE.unpack(_recv_exactly(conn, _CODE.size))
    return code


def _serve_one(conn: socket.socket) -> None:
    header, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
    (size,) = _HEADER.unpack(header)
    request = json.loads(_recv_exactly(conn, size).decode("utf-8", "surrogateescape"))
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    code = 1
    try:
        from cli.main import cli

        cli.main(args=request["argv"], prog_name="fairledger")
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(_CODE.pack(code))


def serve(address: str) -> None:
    # Pay for the imports once, before the first fork.
    import cli.main  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(address)
        server.listen(64)
        print("ready", flush=True)
        while True:
            conn, _ = server.accept()
            if os.fork() == 0:
                server.close()
                try:
                    _serve_one(conn)
                finally:
                    os._exit(0)
            conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])

"""The kshim image's HEALTHCHECK: healthy when kshim answers a Kafka ApiVersions request on its
listener (the port of `--listen-port` in the container's command, else KSHIM_LISTEN_PORT, else 9092)."""

import os
import socket
import struct
import sys


def listen_port() -> int:
    try:
        args = open("/proc/1/cmdline", "rb").read().split(b"\0")
        for i, arg in enumerate(args):
            if arg == b"--listen-port" and i + 1 < len(args):
                return int(args[i + 1])
            if arg.startswith(b"--listen-port="):
                return int(arg.split(b"=", 1)[1])
    except (OSError, ValueError):
        pass
    return int(os.environ.get("KSHIM_LISTEN_PORT", "9092"))


def main() -> int:
    client = b"healthcheck"
    # ApiVersions v0: api key 18, version 0, correlation id 7, client id; no body
    body = struct.pack(">hhih", 18, 0, 7, len(client)) + client
    with socket.create_connection(("127.0.0.1", listen_port()), timeout=3) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        head = b""
        while len(head) < 10:
            chunk = s.recv(10 - len(head))
            if not chunk:
                return 1
            head += chunk
    size, correlation, error = struct.unpack(">iih", head)
    return 0 if correlation == 7 and error == 0 and size > 6 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError:
        sys.exit(1)

"""Request limits of the loopback server: how large a body may be and how
long a request's headers and body may take to arrive."""

from __future__ import annotations

from email.message import Message
from typing import Dict, Mapping

import json
import re
import socket
import threading

from hostkit.wire import RequestError

MAX_BODY_BYTES = 16 << 20
DEFAULT_HEADER_TIMEOUT_MS = 10000
DEFAULT_BODY_TIMEOUT_MS = 60000
# The bounds a configured header or body deadline must lie within.
MIN_READ_TIMEOUT_MS = 100
MAX_READ_TIMEOUT_MS = 600000
# How long an idle kept-alive connection may wait for its next request.
IDLE_TIMEOUT_S = 300
CONTENT_LENGTH = re.compile(r"^[0-9]{1,12}$")


def load_timeouts(environ: Mapping[str, str]) -> Dict[str, int]:
    """Answers the header and body deadlines in milliseconds from
    NEXUS_HOST_HEADER_TIMEOUT_MS and NEXUS_HOST_BODY_TIMEOUT_MS, or raises
    ValueError naming the variable and its bounds."""
    timeouts = {}
    for key, name, default in (("header_timeout_ms", "NEXUS_HOST_HEADER_TIMEOUT_MS", DEFAULT_HEADER_TIMEOUT_MS),
                               ("body_timeout_ms", "NEXUS_HOST_BODY_TIMEOUT_MS", DEFAULT_BODY_TIMEOUT_MS)):
        raw = environ.get(name) or str(default)
        if not raw.isdigit() or not MIN_READ_TIMEOUT_MS <= int(raw) <= MAX_READ_TIMEOUT_MS:
            raise ValueError("%s must be a number of milliseconds between %d and %d, got %r"
                             % (name, MIN_READ_TIMEOUT_MS, MAX_READ_TIMEOUT_MS, raw))
        timeouts[key] = int(raw)
    return timeouts


def parse_content_length(headers: Message) -> int:
    """Answers the body length, or raises RequestError for a length that is
    not a plain decimal number or a body sent in chunks."""
    if headers.get("Transfer-Encoding"):
        raise RequestError(411, "Transfer-Encoding is not accepted; send the body with a Content-Length")
    values = headers.get_all("Content-Length") or []
    if not values:
        return 0
    if len(set(v.strip() for v in values)) != 1 or not CONTENT_LENGTH.match(values[0].strip()):
        raise RequestError(400, "invalid Content-Length %r: it must be one decimal number of bytes" % ", ".join(values))
    return int(values[0].strip())


class ReadGuard:
    """Bounds how long reading one part of a request may take in all.

    A per-read socket timeout does not stop a client that sends one byte at a
    time; this timer answers 408 and shuts the connection down when the whole
    part is not in by its deadline.
    """

    def __init__(self, conn: socket.socket, seconds: float, what: str) -> None:
        self.conn = conn
        self.what = what
        self.seconds = seconds
        self.lock = threading.Lock()
        self.fired = False
        self.done = False
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def _expire(self):
        with self.lock:
            if self.done:
                return
            self.fired = True
        data = json.dumps({"error": "request %s not received within %d ms" % (self.what, int(self.seconds * 1000))}).encode("utf-8")
        try:
            self.conn.sendall(b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
                              b"Content-Length: " + str(len(data)).encode("ascii") + b"\r\n\r\n" + data)
        except OSError:
            pass
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self) -> bool:
        """Stops the timer; answers whether it had already fired."""
        self.timer.cancel()
        with self.lock:
            self.done = True
            return self.fired

"""The loopback HTTP server: it parses and authenticates requests on its own
threads and hands the work to the main thread through a queue (as Revit's
external events do); the HTTP threads never touch a document."""

from __future__ import annotations

from typing import Any, Dict, Mapping, NoReturn, Optional, TYPE_CHECKING, Tuple, Type, cast

import http.server
import io
import json
import queue
import socket
import sys
import threading

from hostkit import auth
from hostkit.limits import IDLE_TIMEOUT_S, MAX_BODY_BYTES, ReadGuard, load_timeouts, parse_content_length
from hostkit.wire import RequestError, valid_unicode

if TYPE_CHECKING:
    from hostkit.runner import Runner

# The line the runtime prints once it serves; the launcher waits for it.
READY_MARKER = "NEXUS_RUNTIME_READY"


def load_settings(environ: Mapping[str, str]) -> Dict[str, Any]:
    """The server's settings from the environment, or ValueError naming the
    variable that is wrong."""
    settings = auth.load(environ)
    settings.update(load_timeouts(environ))
    settings["document"] = environ.get("NEXUS_HOST_DOCUMENT") or ""
    # The person's file every commit is saved to, when there is one.
    settings["save_to"] = environ.get("NEXUS_HOST_SAVE_TO") or ""
    return settings


class Job:
    def __init__(self, kind: str, body: Dict[str, Any]) -> None:
        self.kind = kind
        self.body = body
        self.done = threading.Event()
        self.status = 200
        self.result: Optional[Dict[str, Any]] = None


def make_handler(settings: Dict[str, Any], jobs: queue.Queue[Job], version: str) -> Type[http.server.BaseHTTPRequestHandler]:
    """The request handler: it checks origin, token and body limits on the
    HTTP thread and queues the work for the main thread."""
    routes = {("GET", "/v1/info"): "info", ("POST", "/v1/execute"): "execute_call",
              ("POST", "/v1/export-view"): "export_view", ("POST", "/v1/export-model"): "export_model"}

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = version
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Headers and body go out in two writes; without TCP_NODELAY the
            # second waits on the client's delayed ACK (about 40 ms).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.guard = None

        def handle_one_request(self):
            # An idle kept-alive connection may wait for its next request; once
            # a request's first byte is in, its headers have a deadline.
            self.connection.settimeout(IDLE_TIMEOUT_S)
            try:
                # The server's rfile is buffered (a BufferedReader).
                if not cast(io.BufferedReader, self.rfile).peek(1):
                    self.close_connection = True
                    return
            except OSError:
                self.close_connection = True
                return
            self.guard = ReadGuard(self.connection, settings["header_timeout_ms"] / 1000.0, "headers")
            try:
                super().handle_one_request()
            except OSError:
                self.close_connection = True
            finally:
                if self.guard is not None and self.guard.cancel():
                    self.close_connection = True
                self.guard = None

        def _headers_in(self):
            """Stops the header deadline; answers False when it already expired."""
            fired = self.guard is not None and self.guard.cancel()
            self.guard = None
            if fired:
                self.close_connection = True
                self._body_read = True
            return not fired

        def log_message(self, fmt, *args):
            pass

        def _cors(self):
            origin = self.headers.get("Origin")
            if origin and origin == settings["allowed_origin"]:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Vary", "Origin")

        def _drain(self):
            # A body left unread would be parsed as the next request on a
            # kept-alive connection; read it, or close when it is too large.
            if getattr(self, "_body_read", False):
                return
            self._body_read = True
            try:
                length = parse_content_length(self.headers)
            except RequestError:
                length = -1
            if 0 < length <= MAX_BODY_BYTES:
                guard = ReadGuard(self.connection, settings["body_timeout_ms"] / 1000.0, "body")
                try:
                    self.rfile.read(length)
                finally:
                    if guard.cancel():
                        self.close_connection = True
            elif length != 0:
                self.close_connection = True

        def _send(self, status, payload):
            self._drain()
            payload, replaced = valid_unicode(payload)
            if replaced and isinstance(payload.get("stdout"), str):
                payload["stdout"] += ("[nexus: replaced %d character(s) that are not valid Unicode (lone surrogates, "
                                      "as a file name that is not UTF-8 gives) with U+FFFD in this answer]\n" % replaced)
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="nexus-host"')
            self.end_headers()
            self.wfile.write(data)

        def _origin_ok(self):
            return auth.origin_ok(self.headers.get("Origin"), settings["allowed_origin"])

        def do_OPTIONS(self):
            self._body_read = False
            if not self._headers_in():
                return
            if not self.headers.get("Origin") or not self._origin_ok():
                self._send(403, {"error": "origin not allowed; only %s may call this runtime" % settings["allowed_origin"]})
                return
            self._drain()
            self.send_response(204)
            self._cors()
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Authorization, Content-Type")
            self.send_header("Access-Control-Max-Age", "600")
            if self.headers.get("Access-Control-Request-Private-Network"):
                self.send_header("Access-Control-Allow-Private-Network", "true")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _handle(self, method):
            self._body_read = method == "GET" and not self.headers.get("Content-Length")
            if not self._headers_in():
                return
            if not self._origin_ok():
                self._send(403, {"error": "origin not allowed; only %s may call this runtime" % settings["allowed_origin"]})
                return
            if not auth.token_ok(self.headers.get("Authorization"), settings["token"]):
                self._send(401, {"error": "missing or wrong pairing token; send Authorization: Bearer <token>"})
                return
            path = self.path.split("?", 1)[0]
            kind = routes.get((method, path))
            if kind is None:
                if any(p == path for (_, p) in routes):
                    self._send(405, {"error": "method %s not allowed on %s" % (method, path)})
                else:
                    self._send(404, {"error": "no such endpoint %s" % path})
                return
            body = {}
            if method == "POST":
                try:
                    length = parse_content_length(self.headers)
                except RequestError as exc:
                    # Nothing of a body with an unknown length is read.
                    self.close_connection = True
                    self._body_read = True
                    self._send(exc.status, {"error": exc.message})
                    return
                if length > MAX_BODY_BYTES:
                    self.close_connection = True
                    self._body_read = True
                    self._send(413, {"error": "request body of %d bytes exceeds the limit of %d bytes" % (length, MAX_BODY_BYTES)})
                    return
                self._body_read = True
                raw = b"{}"
                if length:
                    guard = ReadGuard(self.connection, settings["body_timeout_ms"] / 1000.0, "body")
                    try:
                        raw = self.rfile.read(length)
                    finally:
                        if guard.cancel():
                            self.close_connection = True
                            return
                    if len(raw) != length:
                        self.close_connection = True
                        return
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as exc:
                    self._send(400, {"error": "request body is not JSON: %s" % exc})
                    return
                if not isinstance(body, dict):
                    self._send(400, {"error": "request body must be a JSON object"})
                    return
            job = Job(kind, body)
            jobs.put(job)
            job.done.wait()
            self._send(job.status, job.result)

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

    return Handler


def run_job(runner: Runner, job: Job) -> None:
    try:
        job.result = getattr(runner, job.kind)(job.body)
    except RequestError as exc:
        job.status = exc.status
        job.result = exc.result if exc.result is not None else {"error": exc.message}
    except BaseException as exc:  # noqa: B902 - the runtime must outlive any failure
        job.status = 500
        job.result = {"error": "%s: %s" % (type(exc).__name__, exc)}
    finally:
        job.done.set()


def listen(settings: Dict[str, Any], server_version: str) -> Tuple[http.server.HTTPServer, queue.Queue[Job], str]:
    """Starts serving on the settings' address; answers (server, jobs, base
    URL) once it listens, having printed the ready line (and a generated
    pairing token) on stdout."""

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in settings["host"] else socket.AF_INET

    jobs: queue.Queue[Job] = queue.Queue()
    server = Server((settings["host"], settings["port"]), make_handler(settings, jobs, server_version))
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, name="nexus-http", daemon=True).start()
    host = "[%s]" % settings["host"] if ":" in settings["host"] else settings["host"]
    url = "http://%s:%d" % (host, port)
    sys.__stdout__.write("%s %s\n" % (READY_MARKER, url))
    if settings["generated_token"]:
        sys.__stdout__.write("pairing token: %s\n" % settings["token"])
    sys.__stdout__.flush()
    return server, jobs, url


def drain(runner: Runner, jobs: queue.Queue[Job]) -> None:
    """Runs the queued jobs and returns once the queue is empty (a GUI's
    timer calls it, so the event loop keeps running)."""
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        run_job(runner, job)


def serve_forever(runner: Runner, jobs: queue.Queue[Job]) -> NoReturn:
    """Runs jobs on this thread as they come (headless, the main thread
    blocks on the queue)."""
    while True:
        run_job(runner, jobs.get())

"""The host link: a desktop host runtime connects out to Nexus and carries
the tool calls meant for it, with Python's standard library alone.

The runtime holds one long-lived GET /v1/host-link (server-sent events) on
a gateway and posts each result to the session's tool-results route, both
with its host token. Server-sent events and POST are plain HTTP/1.1, so the
link passes every proxy and ingress that passes Nexus's run streams, and
need nothing beyond http.client. The gateway offers every call that has no
result yet again on each (re)connect; the runtime's call ledger makes a
repeat answer the first result without running anything, so a call is
carried at least once on the wire and runs once in the document.

Without a host token the link pairs first, by the device flow of RFC 8628:
it asks for a code, prints it with the URL to approve it at (or `nexus
hosts approve CODE`), and polls until the person approved it.

The link is host-neutral: it is given execute(tool_call) -> result, where
tool_call is the call as the link streams it (its "execute" or "exportView"
request inside) and result is the HostResult to post, as JSON.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import socket
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union, cast

from .handover import HandOver

# How long a silent link is trusted: the gateway writes a keepalive comment
# every 15 s, so three missed ones mean the connection is dead.
READ_TIMEOUT = 45.0
# Reconnect backoff bounds, seconds.
BACKOFF_MIN, BACKOFF_MAX = 0.2, 5.0
# Result posts are retried this long on a network failure or a 5xx; past it
# the call is offered again on the next link and answered from the ledger.
POST_PATIENCE = 600.0
# Largest answer read from a pairing or result request.
MAX_ANSWER = 1 << 20


class Revoked(Exception):
    """The host token was refused: the host was revoked or never paired."""


class Superseded(Exception):
    """A newer link of this host took over: another runtime linked with the
    same token (or this one reconnected). A host has one live link, so this
    runtime stops linking rather than take the link back."""


class LinkError(Exception):
    """A request of the link failed in a way a retry may fix."""


def _split(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError("connect URL %r: want http(s)://host[:port]" % url)
    return u


class Link(HandOver):
    """One runtime's link to Nexus, over one or more gateway URLs (tried in
    turn when one goes away)."""

    RequestError = LinkError

    def __init__(self, urls: Union[str, Sequence[str]], execute: Callable[[Dict[str, Any]], Dict[str, Any]], info: Dict[str, Any],
                 token: str = "", token_file: str = "", log: Optional[Callable[[str], None]] = None,
                 launcher_alive: Callable[[], bool] = lambda: True) -> None:
        if isinstance(urls, str):
            urls = [u.strip() for u in urls.split(",") if u.strip()]
        if not urls:
            raise ValueError("the host link needs at least one gateway URL")
        self.urls = [u.rstrip("/") for u in urls]
        for u in self.urls:
            _split(u)
        self.execute = execute
        self.info = dict(info)
        self.token = token or ""
        self.token_file = token_file or ""
        self.log = log or (lambda msg: None)
        # Whether the program that started this runtime still runs: an
        # orphan never links (process.Launcher says why).
        self.launcher_alive = launcher_alive
        # The code to approve while pairing waits for it (a GUI shows it).
        self.pairing_code = ""
        # The web UI's page that asks the person to approve pairing_code.
        self.pairing_link = ""
        # The call being carried now (its sessionId and toolCall), or None;
        # the session of the last call carried; the host id once linked.
        self.carrying = None
        self.last_session = ""
        self.host_id = ""
        self.last_seq = 0
        self.linked = threading.Event()
        # The latest save handed over for each session: a background retry
        # of an older one gives way to it.
        self._handovers: Dict[str, Any] = {}
        # Why this runtime stopped linking when a newer link took over.
        self.superseded = ""
        self._current = 0
        self._stop = threading.Event()
        self._calls: queue.Queue[Any] = queue.Queue()
        self._inflight: Set[Tuple[Any, Any]] = set()
        self._lock = threading.Lock()
        self._conn = None
        if not self.token and self.token_file and os.path.exists(self.token_file):
            with open(self.token_file) as f:
                self.token = f.read().strip()

    # -- plumbing ---------------------------------------------------------

    @property
    def url(self) -> str:
        return self.urls[self._current % len(self.urls)]

    def _next_url(self):
        self._current += 1

    def _connection(self, url, timeout):
        u = _split(url)
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        return cls(u.hostname, u.port, timeout=timeout), u.path.rstrip("/")

    def _request(self, method, path, body=None, auth=True, timeout=30.0, raw=None):
        conn, base = self._connection(self.url, timeout)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/octet-stream"
        if auth:
            headers["Authorization"] = "Bearer " + self.token
        try:
            try:
                conn.request(method, base + path, body=data, headers=headers)
            except (BrokenPipeError, ConnectionResetError) as exc:
                # A gateway refusing a body over its limit answers before
                # reading all of it and closes: its answer says why, where
                # the broken pipe would not.
                try:
                    resp = conn.getresponse()
                except (OSError, http.client.HTTPException):
                    raise exc from None
            else:
                resp = conn.getresponse()
            raw = resp.read(MAX_ANSWER)
        except (OSError, http.client.HTTPException) as exc:
            raise LinkError("%s %s: %s" % (method, self.url + path, exc))
        finally:
            conn.close()
        try:
            answer = json.loads(raw.decode() or "{}")
        except ValueError:
            answer = {"detail": raw[:300].decode(errors="replace")}
        return resp.status, answer

    # -- pairing ----------------------------------------------------------

    def pair(self) -> None:
        """Runs the device flow until the person approved the code; keeps
        the host token (and writes it to token_file)."""
        # The machine's name is shown to the person approving the code, so
        # they can tell this runtime from one somebody else started.
        status, ans = self._request("POST", "/v1/host-pairings", {
            "hostApp": self.info.get("hostApp", ""), "document": self.info.get("document", ""),
            "runtimeVersion": self.info.get("runtimeVersion", ""), "hostVersion": self.info.get("hostVersion", ""),
            "machine": socket.gethostname()[:200]}, auth=False)
        if status != 200:
            raise LinkError("start pairing: HTTP %d: %s" % (status, ans.get("detail", ans)))
        code = ans["userCode"]
        self.pairing_link = self.url + ans.get("verificationUriComplete", "")
        self.log("To link this %s to Nexus, approve code %s at %s%s or run: nexus hosts approve %s (the code expires in %d minutes)"
                 % (self.info.get("hostApp", "host"), code, self.url, ans.get("verificationUriComplete", ""), code, ans.get("expiresIn", 600) // 60))
        self.pairing_code = code
        try:
            self._await_approval(ans, code)
        finally:
            self.pairing_code = self.pairing_link = ""

    def _await_approval(self, ans, code):
        """Polls the claim until the person approved code; keeps the token."""
        interval = max(1, int(ans.get("interval", 1)))
        deadline = time.monotonic() + int(ans.get("expiresIn", 600))
        while not self._stop.is_set() and time.monotonic() < deadline:
            self._stop.wait(interval)
            try:
                status, got = self._request("POST", "/v1/host-pairings:claim", {"deviceCode": ans["deviceCode"]}, auth=False)
            except LinkError as exc:
                self.log("pairing: %s; retrying" % exc)
                continue
            if status == 429:
                interval += 1
                continue
            if status != 200:
                raise LinkError("pairing refused: HTTP %d: %s" % (status, got.get("detail", got)))
            if got.get("status") == "PAIRING_STATUS_APPROVED":
                self.token = got["hostToken"]
                self._save_token()
                self.log("linked as host %s" % got.get("host", {}).get("hostId", "?"))
                return
        raise LinkError("the pairing code %s expired before it was approved" % code)

    def _save_token(self):
        if not self.token_file:
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.token_file)), exist_ok=True)
        fd = os.open(self.token_file + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.token)
        os.replace(self.token_file + ".tmp", self.token_file)

    def _forget_token(self):
        self.token = ""
        if self.token_file and os.path.exists(self.token_file):
            os.remove(self.token_file)

    # -- the link ---------------------------------------------------------

    def start(self) -> threading.Thread:
        """Runs the link and its worker on daemon threads."""
        threading.Thread(target=self._work, name="nexus-link-worker", daemon=True).start()
        t = threading.Thread(target=self.run, name="nexus-link", daemon=True)
        t.start()
        return t

    def stop(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None:
            try:
                conn.sock and conn.sock.shutdown(2)
            except OSError:
                pass

    def run(self) -> None:
        """Links, and links again after every cut, until stop()."""
        backoff = BACKOFF_MIN
        while not self._stop.is_set():
            if not self.launcher_alive():
                self.linked.clear()
                self.log("the program that started this runtime is gone; this runtime stops linking")
                return
            try:
                if not self.token:
                    self.pair()
                self._link_once()
                backoff = BACKOFF_MIN
            except Revoked as exc:
                self.log("the host token was refused (%s); pairing again" % exc)
                self._forget_token()
            except Superseded as exc:
                self.linked.clear()
                self.superseded = str(exc)
                self.log("host link closed: %s; this runtime stops linking" % exc)
                return
            except (LinkError, OSError, http.client.HTTPException, ValueError) as exc:
                self.linked.clear()
                if self._stop.is_set():
                    return
                self.log("host link to %s lost: %s; reconnecting" % (self.url, exc))
                self._next_url()
                self._stop.wait(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)

    def _link_once(self):
        q = urllib.parse.urlencode({k: self.info.get(k, "") for k in ("hostApp", "document", "runtimeVersion", "hostVersion")})
        conn, base = self._connection(self.url, READ_TIMEOUT)
        self._conn = conn
        headers = {"Accept": "text/event-stream", "Authorization": "Bearer " + self.token}
        if self.last_seq:
            headers["Last-Event-ID"] = str(self.last_seq)
        try:
            conn.request("GET", base + "/v1/host-link?" + q, headers=headers)
            resp = conn.getresponse()
            if resp.status in (401, 403):
                raise Revoked("HTTP %d" % resp.status)
            if resp.status != 200:
                raise LinkError("HTTP %d: %s" % (resp.status, resp.read(2000).decode(errors="replace")))
            self._read_events(resp)
        finally:
            self._conn = None
            conn.close()
        raise LinkError("the gateway closed the link")

    def _read_events(self, resp):
        event, data = "message", cast(List[str], [])
        while not self._stop.is_set():
            line = resp.readline()
            if not line:
                return
            line = line.decode("utf-8").rstrip("\r\n")
            if line == "":
                if data:
                    self._on_event(event, "\n".join(data))
                event, data = "message", []
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)

    def _on_event(self, event, data):
        payload = json.loads(data)
        if event == "linked":
            self.host_id = payload.get("hostId", "")
            self.linked.set()
            self.log("host link open on %s as %s" % (self.url, payload.get("hostId")))
        elif event == "call":
            self.last_seq = max(self.last_seq, int(payload.get("seq", 0)))
            key = (payload.get("sessionId"), payload.get("toolCall", {}).get("toolCallId"))
            with self._lock:
                if key in self._inflight:
                    return
                self._inflight.add(key)
            self._calls.put(payload)
        elif event == "error":
            # The event is a stream chunk: {"error": {"code", "message"}}.
            err = payload.get("error", {}) if isinstance(payload.get("error"), dict) else payload
            message = err.get("message", "the link ended with an error")
            if err.get("code") == "ERROR_CODE_HOST_UNAUTHORIZED":
                raise Revoked(message)
            if err.get("code") == "ERROR_CODE_HOST_SUPERSEDED":
                raise Superseded(message)
            raise LinkError(message)

    # -- carrying calls ---------------------------------------------------

    def _work(self):
        while not self._stop.is_set():
            call = self._calls.get()
            key = (call.get("sessionId"), call.get("toolCall", {}).get("toolCallId"))
            self.carrying = call
            self.last_session = call.get("sessionId", "")
            try:
                self._carry(call)
            finally:
                self.carrying = None
                with self._lock:
                    self._inflight.discard(key)

    def _carry(self, call):
        tc = call.get("toolCall", {})
        try:
            result = self.execute(tc)
        except Exception as exc:  # noqa: B902 - a failing adapter is a result, not a dead link
            result = {"error": {"type": "HostRuntimeError", "message": "%s: %s" % (type(exc).__name__, exc)}}
        result = self._hand_over(call.get("sessionId", ""), result)
        body = {"toolCallId": tc.get("toolCallId"), "resultToken": tc.get("resultToken"), "result": result}
        path = "/v1/sessions/%s/tool-results" % urllib.parse.quote(call.get("sessionId", ""), safe="")
        deadline = time.monotonic() + POST_PATIENCE
        backoff = BACKOFF_MIN
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                status, ans = self._request("POST", path, body, timeout=60.0)
            except LinkError as exc:
                self.log("post result of %s: %s; retrying" % (tc.get("toolCallId"), exc))
                self._next_url()
            else:
                if status == 200:
                    return
                if status < 500 and status != 429:
                    # Decided already (a repeat, a timeout, a cancel) or
                    # refused for good: the run has its answer.
                    self.log("result of %s refused: HTTP %d: %s" % (tc.get("toolCallId"), status, ans.get("detail", ans)))
                    return
            self._stop.wait(backoff)
            backoff = min(BACKOFF_MAX, backoff * 2)

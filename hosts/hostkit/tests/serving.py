"""Starts the kit's real server on loopback in front of a Runner on the
plain-Python host, for tests that speak HTTP to it."""

import http.client
import json
import tempfile
import threading

from hostkit import process, server
from hostkit.runner import Runner
from hostkit.tests.memhost import MemHost

TOKEN = "test-token"
ORIGIN = "http://127.0.0.1:8080"


class Served:
    def __init__(self, **env):
        environ = {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": TOKEN, "NEXUS_HOST_ALLOWED_ORIGIN": ORIGIN}
        environ.update(env)
        self.settings = server.load_settings(environ)
        self.host = MemHost()
        self.runner = Runner(self.host, process.StatusPipe(None), tempfile.mkdtemp(prefix="hostkit-served-"))
        self.srv, jobs, self.url = server.listen(self.settings, "NexusTest/0")
        self.port = self.srv.server_address[1]
        threading.Thread(target=server.serve_forever, args=(self.runner, jobs), daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    def request(self, method, path, body=None, headers=None, token=TOKEN):
        """Answers (status, headers, decoded JSON body or raw bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            h = {"Authorization": "Bearer " + token} if token is not None else {}
            h.update(headers or {})
            data = json.dumps(body).encode("utf-8") if isinstance(body, dict) else body
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw
            return resp.status, resp, payload
        finally:
            conn.close()

    def execute(self, **body):
        status, _, payload = self.request("POST", "/v1/execute", body)
        return status, payload

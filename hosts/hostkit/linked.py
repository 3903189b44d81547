"""Wires the host link (link.py) into a runtime on the host kit: the link's
calls go through the same job queue, runner and call ledger as the loopback
server's, so no call runs twice whoever carries it."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, TYPE_CHECKING

from hostkit import process
from hostkit.link import Link
from hostkit.server import Job

if TYPE_CHECKING:
    import queue
    
    from hostkit.runner import Runner

# The request field of a streamed call, and the runner's method for it.
ROUTES = (("execute", "execute_call"), ("exportView", "export_view"))


def start(environ: Mapping[str, str], runner: Runner, jobs: queue.Queue[Job],
          log: Callable[[str], None]) -> Optional[Link]:
    """Starts the link when NEXUS_HOST_CONNECT_URL is set; answers it, or
    None. NEXUS_HOST_LINK_TOKEN is its host token; without one it pairs and
    keeps the token in NEXUS_HOST_LINK_TOKEN_FILE."""
    url = environ.get("NEXUS_HOST_CONNECT_URL") or ""
    if not url:
        return None

    def execute(call):
        for field, kind in ROUTES:
            if field in call:
                job = Job(kind, call[field])
                jobs.put(job)
                job.done.wait()
                result: Dict[str, Any] = job.result if isinstance(job.result, dict) else {}
                if job.status != 200 and not isinstance(result.get("error"), dict):
                    # A refusal of the runtime's own (a bad request) is a
                    # result the model can act on.
                    result = {"error": {"type": "HostRuntimeError", "message": str(result.get("error", "HTTP %d" % job.status))}}
                return result
        return {"error": {"type": "HostRuntimeError", "message": "the call carries no request this runtime knows"}}

    link = Link(url, execute, runner.info({}), token=environ.get("NEXUS_HOST_LINK_TOKEN") or "",
                token_file=environ.get("NEXUS_HOST_LINK_TOKEN_FILE") or "", log=log,
                launcher_alive=process.Launcher.from_environ(environ).alive)
    link.start()
    return link

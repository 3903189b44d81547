"""Who may call the runtime: it listens on loopback only, every request
carries the pairing token, and browsers may call it only from the one
configured gateway origin."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import hmac
import secrets

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_ADDR = "127.0.0.1:7723"
DEFAULT_ORIGIN = "http://127.0.0.1:8080"


def parse_addr(addr: str) -> Tuple[str, int]:
    """Answers (host, port) of a loopback address, or raises ValueError."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    if host not in LOOPBACK_HOSTS:
        raise ValueError("NEXUS_HOST_ADDR must be a loopback address (127.0.0.1, ::1, localhost), got %r" % addr)
    try:
        number = int(port)
    except ValueError:
        raise ValueError("NEXUS_HOST_ADDR must end with a port, got %r" % addr)
    return host, number


def load(environ: Mapping[str, str]) -> Dict[str, Any]:
    """Answers the address, token and origin settings from the environment
    (NEXUS_HOST_ADDR, NEXUS_HOST_TOKEN, NEXUS_HOST_ALLOWED_ORIGIN); a token
    is generated when none is set."""
    host, port = parse_addr(environ.get("NEXUS_HOST_ADDR") or DEFAULT_ADDR)
    return {
        "host": host,
        "port": port,
        "token": environ.get("NEXUS_HOST_TOKEN") or secrets.token_urlsafe(32),
        "generated_token": not environ.get("NEXUS_HOST_TOKEN"),
        "allowed_origin": environ.get("NEXUS_HOST_ALLOWED_ORIGIN") or DEFAULT_ORIGIN,
    }


def token_ok(authorization: Optional[str], token: str) -> bool:
    """Whether an Authorization header carries the pairing token, compared
    in constant time."""
    expected = "Bearer " + token
    return hmac.compare_digest((authorization or "").encode("utf-8"), expected.encode("utf-8"))


def origin_ok(origin: Optional[str], allowed: str) -> bool:
    """Whether a request may come from origin: no Origin (not a browser) or
    the configured one."""
    return origin is None or origin == allowed

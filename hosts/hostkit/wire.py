"""The JSON wire format of the host runtime contract (proto/nexus/host/v1):
request fields, refusals, and the parts of a HostResult every host fills the
same way."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import base64
import json
import re

MODES = ("MODE_READ_ONLY", "MODE_TRANSACTION", "MODE_PREVIEW")
CHANGE_KINDS = ("CHANGE_KIND_UNSPECIFIED", "CHANGE_KIND_ADDED", "CHANGE_KIND_MODIFIED", "CHANGE_KIND_DELETED")
INT32_MAX = 2147483647
# The epilogue prints its change report as data on its last line after this
# marker (services/capability/hosts/change_report.py defines the same); the
# runtime moves it to epilogue.report.
REPORT_MARKER = "NEXUS-REPORT-JSON "
SURROGATE = re.compile("[\ud800-\udfff]")


class RequestError(Exception):
    """A request the runtime refuses; status is the HTTP status to answer."""

    def __init__(self, status: int, message: str, result: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        # The answer's body when it is a HostResult (a refused call id).
        self.result = result


def error(kind: str, message: str, traceback: str = "", line: int = 0) -> Dict[str, Any]:
    """A HostResult error of the given type."""
    return {"type": kind, "message": message, "traceback": traceback, "line": line}


def int_value(value: Any, default: int, low: int, high: int, name: str) -> int:
    if value in (None, "", 0, "0"):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RequestError(400, "%s must be an integer, got %r" % (name, value))
    if number < low or number > high:
        raise RequestError(400, "%s must be between %d and %d, got %d" % (name, low, high, number))
    return number


def int_field(body: Dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    return int_value(body.get(name), default, low, high, name)


def rollback_exactness(problems: Sequence[str]) -> Dict[str, Any]:
    """The result's fields saying whether a rollback left the document
    exactly as before, and what still differs when it did not."""
    if problems:
        return {"rollback": "ROLLBACK_EXACTNESS_NOT_EXACT", "rollbackDifferences": list(problems)}
    return {"rollback": "ROLLBACK_EXACTNESS_EXACT"}


def png_image(data: bytes, view: str, width: int, height: int, framed: bool) -> Dict[str, Any]:
    """A HostResult image of PNG bytes."""
    return {"mimeType": "image/png", "data": base64.b64encode(data).decode("ascii"),
            "view": view, "width": width, "height": height, "framed": framed}


def valid_unicode(value: Any) -> Tuple[Any, int]:
    """Answers (value with every string valid Unicode, how many characters
    were replaced). Python holds what cannot be decoded (a file name that is
    not UTF-8, from os.listdir) as lone surrogates, which UTF-8 cannot carry
    and a strict JSON decoder refuses; each becomes U+FFFD, and a proper pair
    becomes its character."""
    if isinstance(value, str):
        if not SURROGATE.search(value):
            return value, 0
        fixed = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed, fixed.count("\ufffd") - value.count("\ufffd")
    if isinstance(value, dict):
        fields: Dict[Any, Any] = {}
        n = 0
        for k, v in value.items():
            fields[k], m = valid_unicode(v)
            n += m
        return fields, n
    if isinstance(value, list):
        items: List[Any] = []
        n = 0
        for v in value:
            fixed, m = valid_unicode(v)
            items.append(fixed)
            n += m
        return items, n
    return value, 0


# ---------------------------------------------------------------------------
# The change report as data: the epilogue's last line.


def _strings(value):
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _clean_entry(raw, fields):
    """Answers raw as an entry of the report with only the given fields
    (name -> check), or None when it holds anything else: the courier decodes
    the answer strictly, so one stray field would fail the whole call."""
    if not isinstance(raw, dict) or not set(raw) <= set(fields):
        return None
    for name, ok in fields.items():
        if name in raw and not ok(raw[name]):
            return None
    return dict(raw)


_ELEMENT_FIELDS = {
    "change": lambda v: v in CHANGE_KINDS,
    "category": lambda v: isinstance(v, str),
    "name": lambda v: isinstance(v, str),
    "label": lambda v: isinstance(v, str),
    "properties": _strings,
    "type": lambda v: isinstance(v, str),
    "level": lambda v: isinstance(v, str),
}
_HELPER_FIELDS = {
    "change": lambda v: v in CHANGE_KINDS,
    "kind": lambda v: isinstance(v, str),
    "count": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= INT32_MAX,
}


def clean_report(raw: Any) -> Optional[Dict[str, Any]]:
    """Answers the report as the ChangeReport message's JSON, or None when
    raw is not one."""
    if not isinstance(raw, dict) or not set(raw) <= {"elements", "helpers"}:
        return None
    out = {}
    for key, fields in (("elements", _ELEMENT_FIELDS), ("helpers", _HELPER_FIELDS)):
        items = raw.get(key, [])
        if not isinstance(items, list):
            return None
        cleaned = [_clean_entry(item, fields) for item in items]
        if any(c is None for c in cleaned):
            return None
        out[key] = cleaned
    return out


def extract_report(stdout: str) -> Tuple[str, Optional[Dict[str, Any]]]:
    """Answers (stdout without the report line, report) when the epilogue's
    last line is the marker and a valid report; otherwise (stdout, None) with
    stdout untouched: a malformed report never fails the call."""
    body = stdout[:-1] if stdout.endswith("\n") else stdout
    head, sep, last = body.rpartition("\n")
    if not last.startswith(REPORT_MARKER):
        return stdout, None
    try:
        report = clean_report(json.loads(last[len(REPORT_MARKER):]))
    except ValueError:
        return stdout, None
    if report is None:
        return stdout, None
    return head + sep, report

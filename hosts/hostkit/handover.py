"""The hand-over of a saved file: after a commit saved to the person's
file, the link hands the file to Nexus for the session (the web UI's
download). A part of Link (it uses the link's requests, lock, stop event
and log)."""

import os
import threading
import urllib.parse
from typing import Any, Callable, Dict, Type

# A saved file's hand-over is tried this many times on a network failure,
# a 5xx or a 429, waiting HAND_OVER_BACKOFF, then twice that, between
# tries: the run waits for the result behind it, so the tries stay short.
HAND_OVER_TRIES, HAND_OVER_BACKOFF = 3, 0.5
# Past those tries the hand-over goes on in the background, waiting up to
# HAND_OVER_BACKOFF_MAX between tries, until the file lands, the session
# ends (404), a newer save of the session takes over, or the link stops: a
# store outage or an orchestrator restart delays the download, never loses it.
HAND_OVER_BACKOFF_MAX = 30.0


class HandOver:
    """The hand-over's part of Link. RequestError is the error of a request
    of the link that a retry may fix (link.LinkError)."""

    RequestError: Type[Exception] = Exception
    # What Link gives its part: its log, lock, stop event, the latest
    # hand-over of each session and its requests.
    log: Callable[[str], None]
    _lock: threading.Lock
    _stop: threading.Event
    _handovers: Dict[str, Any]
    _request: Callable[..., Any]

    def _hand_over(self, session_id, result):
        """After a commit saved to the person's file, hands the file to
        Nexus for the session (the web UI's download), before the result:
        whoever reads the result finds the document it speaks of. Answers
        the result with its save saying whether the hand-over worked and,
        when not, why (the commit and the saved file stand either way); a
        result without a saved file is answered as it is. The result given
        is not changed: the ledger may hold it, and a repeat of the call
        hands the file over again."""
        save = result.get("save") if isinstance(result, dict) else None
        if not isinstance(save, dict) or save.get("outcome") != "SAVE_OUTCOME_SAVED" or not save.get("path"):
            return result
        err = self._put_document(session_id, save["path"])
        if err:
            self.log("hand over %s for session %s: %s" % (save["path"], session_id, err))
            save = dict(save, handOver="DOCUMENT_HAND_OVER_FAILED", handOverError=err)
        else:
            save = dict(save, handOver="DOCUMENT_HAND_OVER_RECEIVED")
            save.pop("handOverError", None)
        return dict(result, save=save)

    def _put_document(self, session_id, path):
        """PUTs the file at path as the session's document; answers why it
        failed, or "" once Nexus holds it. A failure that may pass (a 5xx,
        a 429, a gateway away) is tried again in the background after the
        short tries the result waits for."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            return "could not read %s: %s" % (path, exc.strerror or exc)
        query = urllib.parse.urlencode({"fileName": os.path.basename(path)})
        target = "/v1/sessions/%s/document?%s" % (urllib.parse.quote(session_id, safe=""), query)
        with self._lock:
            generation = self._handovers.get(session_id, 0) + 1
            self._handovers[session_id] = generation
        backoff = HAND_OVER_BACKOFF
        for attempt in range(1, HAND_OVER_TRIES + 1):
            why, again = self._put_once(target, data)
            if not why:
                return ""
            if not again or attempt == HAND_OVER_TRIES or self._stop.wait(backoff):
                break
            self.log("hand over %s: %s; trying again" % (path, why))
            backoff *= 2
        if attempt > 1:
            why += " (%d tries)" % attempt
        if again and not self._stop.is_set():
            why += "; still trying until it lands or the session ends"
            threading.Thread(target=self._keep_handing_over, args=(session_id, generation, path, target, data, backoff), daemon=True).start()
        return why

    def _put_once(self, target, data):
        """One PUT of a document: answers why it failed ("" when it landed)
        and whether trying again may help."""
        try:
            status, ans = self._request("PUT", target, raw=data, timeout=120.0)
        except self.RequestError as exc:
            return str(exc), True
        if status == 200:
            return "", False
        why = "HTTP %d: %s" % (status, ans.get("detail", ans) if isinstance(ans, dict) else ans)
        # A refusal (over the size limit, the session gone) is the same next time.
        return why, status >= 500 or status == 429

    def _keep_handing_over(self, session_id, generation, path, target, data, backoff):
        tries = HAND_OVER_TRIES
        while not self._stop.wait(min(backoff, HAND_OVER_BACKOFF_MAX)):
            with self._lock:
                if self._handovers.get(session_id) != generation:
                    return
            tries += 1
            why, again = self._put_once(target, data)
            if not why:
                self.log("handed over %s for session %s after %d tries" % (path, session_id, tries))
                return
            if not again:
                self.log("hand over %s for session %s: %s; given up" % (path, session_id, why))
                return
            backoff *= 2

"""The runtime does not outlive the program that started it: killed with
SIGKILL (no chance to stop its runtime), the launcher leaves a runtime that
never links again and ends by itself. Real processes: a launcher that
starts the runtime and is then killed."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from hostkit.link import Link
from hostkit.process import Launcher

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The runtime's side: it records, every 20 ms, whether its launcher is
# alive, and ends through Launcher.watch like a runtime does.
RUNTIME = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, %r)
    from hostkit.process import Launcher
    launcher = Launcher.from_environ(os.environ)
    launcher.watch()
    with open(sys.argv[1], "a") as out:
        while True:
            out.write("alive\\n" if launcher.alive() else "gone\\n")
            out.flush()
            time.sleep(0.02)
""") % HERE

# The launcher's side: it starts the runtime with its own pid, as nexus does.
LAUNCHER = textwrap.dedent("""
    import os, subprocess, sys, time
    env = dict(os.environ, NEXUS_HOST_PARENT_PID=str(os.getpid()))
    p = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], env=env)
    print(p.pid, flush=True)
    time.sleep(600)
""")


def wait_for(what, check, limit=30.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("gave up waiting (%ss) for %s" % (limit, what))


class LauncherDeath(unittest.TestCase):
    def test_the_runtime_of_a_killed_launcher_sees_it_gone_and_ends(self):
        log = os.path.join(tempfile.mkdtemp(prefix="hostkit-launcher-"), "runtime.log")
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, RUNTIME, log], stdout=subprocess.PIPE)
        self.addCleanup(launcher.stdout.close)
        self.addCleanup(launcher.kill)
        runtime = int(launcher.stdout.readline())

        def lines():
            try:
                with open(log) as f:
                    return f.read().split()
            except FileNotFoundError:
                return []

        wait_for("the runtime to see its launcher", lambda: "alive" in lines())
        self.assertNotIn("gone", lines(), "the launcher was taken for gone while it ran")
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait()
        wait_for("the runtime to see its launcher gone", lambda: "gone" in lines())

        def ended():
            try:
                os.kill(runtime, 0)
            except ProcessLookupError:
                return True
            # Not its child here: a zombie is reaped by init, so read its state.
            try:
                with open("/proc/%d/stat" % runtime) as f:
                    return f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except FileNotFoundError:
                return True

        wait_for("the runtime to end", ended)

    def test_no_launcher_named_is_always_alive(self):
        self.assertTrue(Launcher(0).alive())
        self.assertTrue(Launcher.from_environ({"NEXUS_HOST_PARENT_PID": "not a pid"}).alive())

    def test_a_launcher_that_is_not_the_parent_is_asked_by_pid(self):
        # Through a wrapper (xvfb-run) the launcher is not the parent.
        self.assertTrue(Launcher(os.getpid()).alive())
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        self.assertFalse(Launcher(gone.pid).alive())


class OrphanLink(unittest.TestCase):
    def test_a_runtime_whose_launcher_is_gone_never_links(self):
        tried = []
        link = Link("http://127.0.0.1:9", lambda call: {}, {}, token="nxh_test", launcher_alive=lambda: False)
        link._link_once = lambda: tried.append(1)
        logged = []
        link.log = logged.append
        link.run()
        self.assertEqual(tried, [], "an orphaned runtime opened a link")
        self.assertFalse(link.linked.is_set())
        self.assertIn("the program that started this runtime is gone", logged[0])


if __name__ == "__main__":
    unittest.main()

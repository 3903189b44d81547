import signal
import sys
import threading
import unittest
from unittest import mock

from hostkit import executor
from hostkit.deadline import Deadline, ScriptTimeout
from hostkit.executor import SCRIPT_FILENAME, run_code


def run(code, timeout_ms=5000, threads=None):
    return run_code(code, SCRIPT_FILENAME, {"__name__": "__nexus__"}, timeout_ms, threads=threads)


class TimeoutTest(unittest.TestCase):
    def test_an_endless_loop_is_stopped(self):
        stdout, error = run("print('started')\nwhile True:\n    pass\n", timeout_ms=300)
        self.assertEqual(stdout, "started\n")
        self.assertEqual(error["type"], "ScriptTimeout")
        self.assertEqual(error["message"], "script exceeded its timeout of 300 ms and was aborted")
        self.assertIn(error["line"], (2, 3))

    def test_a_blocking_sleep_is_interrupted(self):
        _, error = run("import time\ntime.sleep(3600)\n", timeout_ms=300)
        self.assertEqual(error["type"], "ScriptTimeout")
        self.assertEqual(error["line"], 2)

    def test_catching_exception_does_not_swallow_the_timeout(self):
        code = "while True:\n    try:\n        sum(range(1000))\n    except Exception:\n        pass\n"
        _, error = run(code, timeout_ms=300)
        self.assertEqual(error["type"], "ScriptTimeout")

    def test_a_bare_except_that_removes_the_tracer_is_stopped_by_the_watchdog(self):
        code = ("import sys\nn = 0\nwhile True:\n    try:\n        sys.settrace(None)\n        n += 1\n"
                "    except:\n        pass\n    if n > 10 ** 12:\n        break\n")
        _, error = run(code, timeout_ms=300)
        self.assertIsNotNone(error)
        self.assertEqual(error["type"], "ScriptTimeout")

    def test_a_quick_script_is_not_touched(self):
        stdout, error = run("print(sum(range(10)))\n")
        self.assertIsNone(error)
        self.assertEqual(stdout, "45\n")


class DisarmTest(unittest.TestCase):
    """A ScriptTimeout that lands while the deadline is being taken down (the
    watchdog's, set just before the script ended) must not skip a step of it:
    once, under load, it skipped the rest, and the interval timer went on
    raising ScriptTimeout in the tests that ran next."""

    def setUp(self):
        self.addCleanup(signal.signal, signal.SIGALRM, signal.SIG_DFL)
        self.addCleanup(signal.setitimer, signal.ITIMER_REAL, 0)

    def run_landing_on_disarm(self, code):
        """Runs code with signal.setitimer replaced: its first call that
        stops the timer raises ScriptTimeout before stopping it, as an
        exception landing there would. The deadline must be down all the
        same: no interval timer, the alarm's handler and the tracer gone."""
        real = signal.setitimer
        landed = []

        def setitimer(which, seconds, interval=0.0):
            if seconds == 0 and not landed:
                landed.append(True)
                raise executor.ScriptTimeout("landed while disarming")
            return real(which, seconds, interval)
        with mock.patch.object(signal, "setitimer", setitimer):
            stdout, error = run(code)
        self.assertEqual(landed, [True])
        self.assertEqual(signal.getitimer(signal.ITIMER_REAL), (0.0, 0.0), "the interval timer still runs")
        self.assertEqual(signal.getsignal(signal.SIGALRM), signal.SIG_DFL, "the alarm's handler is still the script's")
        self.assertIsNone(sys.gettrace(), "the tracer is still set")
        return stdout, error

    def test_a_script_that_returned_is_disarmed_and_timed_out(self):
        stdout, error = self.run_landing_on_disarm("print('done')\n")
        self.assertEqual(stdout, "done\n")
        self.assertEqual(error["type"], "ScriptTimeout")

    def test_a_script_that_raised_keeps_its_error_and_is_disarmed(self):
        _, error = self.run_landing_on_disarm("x = 1\nraise ValueError('the script failed')\n")
        self.assertEqual(error["type"], "ValueError")
        self.assertEqual(error["line"], 2)

    def test_past_the_deadline_only_the_script_is_interrupted(self):
        # The alarm's tick and the tracer both fire at the deadline: the one
        # that comes second, once the first is on its way out of the script,
        # must not replace it with a timeout that names no line of it.
        deadline = Deadline(0, SCRIPT_FILENAME)
        ns = {"sys": sys}
        exec(compile("script = sys._getframe()\n", SCRIPT_FILENAME, "exec"), ns)
        outside = sys._getframe()
        deadline._alarm(signal.SIGALRM, outside)
        self.assertIsNone(deadline._global(outside, "call", None))
        with self.assertRaises(ScriptTimeout):
            deadline._alarm(signal.SIGALRM, ns["script"])
        with self.assertRaises(ScriptTimeout):
            deadline._global(ns["script"], "call", None)


class CaptureTest(unittest.TestCase):
    def test_stdout_and_stderr_are_captured(self):
        stdout, error = run("import sys\nprint('out')\nsys.stderr.write('err\\n')\n")
        self.assertIsNone(error)
        self.assertEqual(stdout, "out\nerr\n")

    def test_output_over_the_limit_keeps_head_and_tail(self):
        out = executor.BoundedOutput(limit=100)
        for i in range(1000):
            out.write("%04d\n" % i)
        text = out.getvalue()
        self.assertTrue(text.startswith("0000\n0001\n"))
        self.assertTrue(text.endswith("0998\n0999\n"))
        self.assertIn("the script printed 5000 characters, more than the runtime's limit of 100 characters; "
                      "the first 75 and the last 25 are kept and the 4900 between them were dropped", text)

    def test_sys_exit(self):
        stdout, error = run("print('a')\nimport sys\nsys.exit(0)\nprint('b')\n")
        self.assertIsNone(error)
        self.assertEqual(stdout, "a\n")
        _, error = run("import sys\nsys.exit(3)\n")
        self.assertEqual(error["type"], "SystemExit")
        self.assertEqual(error["message"], "script called sys.exit(3)")

    def test_errors_name_the_script_line_and_hide_the_kit(self):
        _, error = run("x = 1\n\ndef f():\n    return {}['k']\nf()\n")
        self.assertEqual(error["type"], "KeyError")
        self.assertEqual(error["line"], 4)
        self.assertIn('File "<nexus-script>", line 4, in f', error["traceback"])
        self.assertNotIn("executor.py", error["traceback"])
        _, error = run("x = (\n")
        self.assertEqual(error["type"], "SyntaxError")
        self.assertEqual(error["line"], 1)

    def test_threads_a_script_starts_are_stopped_when_it_ends(self):
        threads = executor.ScriptThreads()
        code = ("import threading, time\nseen = []\n"
                "def spin():\n    while True:\n        time.sleep(0.01)\n"
                "threading.Thread(target=spin, name='spinner', daemon=True).start()\n")
        stdout, error = run(code, threads=threads)
        self.assertIsNone(error)
        self.assertIn("stopped 1 thread(s) the script started (spinner)", stdout)
        self.assertNotIn("spinner", [t.name for t in threading.enumerate()])


if __name__ == "__main__":
    unittest.main()

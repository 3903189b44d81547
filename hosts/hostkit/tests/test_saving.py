import os
import tempfile
import unittest

from hostkit import saving


def writer(text):
    def save(path):
        with open(path, "w") as f:
            f.write(text)
    return save


class SavingTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hostkit-saving-")
        self.target = os.path.join(self.dir, "house.FCStd")

    def read(self, path):
        with open(path) as f:
            return f.read()

    def test_saves_keep_numbered_backups(self):
        for text in ("one", "two", "three"):
            saving.save_atomically(writer(text), self.target, 2)
        self.assertEqual(self.read(self.target), "three")
        self.assertEqual(self.read(self.target + "1"), "two")
        self.assertEqual(self.read(self.target + "2"), "one")
        # Nothing else is left in the folder: the temporary file was renamed.
        self.assertEqual(sorted(os.listdir(self.dir)), ["house.FCStd", "house.FCStd1", "house.FCStd2"])

    def test_no_backups(self):
        saving.save_atomically(writer("one"), self.target, 0)
        saving.save_atomically(writer("two"), self.target, 0)
        self.assertEqual(os.listdir(self.dir), ["house.FCStd"])

    def test_a_failing_save_leaves_the_file_as_it_was(self):
        saving.save_atomically(writer("kept"), self.target, 1)

        def broken(path):
            with open(path, "w") as f:
                f.write("half")
            raise RuntimeError("disk full")
        with self.assertRaises(OSError) as ctx:
            saving.save_atomically(broken, self.target, 1)
        self.assertEqual(str(ctx.exception), "could not write %s: disk full" % self.target)
        self.assertEqual(self.read(self.target), "kept")
        self.assertEqual(os.listdir(self.dir), ["house.FCStd"])
        self.assertEqual(saving.outcome(self.target, ctx.exception),
                         {"outcome": "SAVE_OUTCOME_FAILED", "path": self.target, "error": str(ctx.exception)})

    def test_a_folder_that_does_not_exist(self):
        missing = os.path.join(self.dir, "gone", "house.FCStd")
        with self.assertRaises(OSError):
            saving.save_atomically(writer("x"), missing, 1)


if __name__ == "__main__":
    unittest.main()

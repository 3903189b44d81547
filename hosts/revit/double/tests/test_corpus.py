"""Scripts nobody on the project wrote, converted mechanically
(tools/corpus_convert.py records each adaptation) and run on the double as
Revit's consoles run them (corpus_run.py). corpus/*/corpus.json says which
run and what the rest lack; this test holds the double to it both ways: a
script listed as running runs, and one listed as lacking an API still fails
on that API (when the double gains it, the list is made again)."""
import json
import os
import unittest
from concurrent.futures import ThreadPoolExecutor

import corpus_run

CORPUS = os.path.join(corpus_run.DOUBLE, "corpus")


def manifests():
    for name in sorted(os.listdir(CORPUS)):
        path = os.path.join(CORPUS, name, "corpus.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                yield name, json.load(f)


class CorpusTest(unittest.TestCase):
    def test_each_script_does_what_the_list_says(self):
        jobs = []
        for name, m in manifests():
            self.assertTrue(m["source"] and m["licence"], "%s: the corpus names its source and licence" % name)
            for entry in m["scripts"]:
                with open(os.path.join(CORPUS, name, entry["script"].replace("/", "__")), encoding="utf-8") as f:
                    code = f.read()
                jobs.append((name, entry, code))
        self.assertTrue(jobs, "no corpus scripts")
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda j: corpus_run.run(j[2]), jobs))
        runs = 0
        for (name, entry, _), got in zip(jobs, results):
            with self.subTest(script=name + "/" + entry["script"]):
                want = {k: entry[k] for k in ("status", "lacks") if k in entry}
                self.assertEqual({k: got[k] for k in ("status", "lacks") if k in got}, want,
                                 "run python3 hosts/revit/tools/corpus_convert.py again if the double changed: %s" % got)
            runs += got["status"] == "runs"
        print("corpus: %d scripts, %d run on the double" % (len(jobs), runs))


if __name__ == "__main__":
    unittest.main()

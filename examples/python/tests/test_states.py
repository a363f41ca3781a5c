"""record_states and gaps(all=True) against a real record API.

Run by the Go test TestPythonClient, as test_client.py: the sidecar's
durable tier keeps gap states, and the Go test checks afterwards that the
retries of test_retries_record_each_entry_once left one event per entry.
"""

import os
import random
import threading
import unittest

import covmirror_client as cm
from test_client import TOKEN_FILE, URL, FaultyProxy, clients, committed, fast, fresh_topic


def kinds(gaps, topic):
    return [(g["sink"], g["start"], g["end"], g["kind"], (g.get("decision") or {}).get("by") is not None)
            for g in gaps if g["topic"] == topic and g["sink"] == "lake"]


class StatesTest(unittest.TestCase):
    def test_refused_stays_a_gap_and_reopens(self):
        """A refused range leaves the replay plan with its decision, is never
        coverage, and a reopen returns it to the plan."""
        for name, c in clients():
            with self.subTest(transport=name), c:
                topic = fresh_topic("states")
                c.record([{"sink": "raw", "topic": topic, "partition": 0, "start": 0, "end": 20},
                          {"sink": "lake", "topic": topic, "partition": 0, "start": 0, "end": 5}])
                c.checkpoint()
                reason = "<b>400</b>: the row violates a constraint"
                events = c.record_states([{"sink": "lake", "topic": topic, "partition": 0, "start": 5, "end": 10,
                                           "state": "refused", "reason": reason}])
                self.assertEqual(len(events), 1)
                self.assertEqual((events[0]["state"], events[0]["reason"], len(events[0]["id"])), ("refused", reason, 32))
                self.assertTrue(events[0]["by"] and events[0]["at"])
                self.assertEqual(kinds(c.gaps(topic=topic), topic),
                                 [("lake", 5, 10, "refused", True), ("lake", 10, 20, "replay", False)])
                self.assertEqual(kinds(c.gaps(topic=topic, all=True), topic),
                                 [("lake", 5, 10, "refused", True), ("lake", 10, 20, "replay", False)])
                self.assertEqual([(t["start"], t["end"]) for t in c.plan() if t["topic"] == topic and t["sink"] == "lake"], [(10, 20)])
                self.assertEqual(committed(c, topic)[("lake", 0)], [(0, 5)])
                c.record_states([{"sink": "lake", "topic": topic, "partition": 0, "start": 5, "end": 10,
                                  "state": "reopened", "reason": "the sink's schema is fixed"}])
                self.assertEqual(kinds(c.gaps(topic=topic), topic), [("lake", 5, 20, "replay", False)])

    def test_bounds_refused_before_sending(self):
        c = cm.Client(URL, **fast({"token_file": TOKEN_FILE}))
        good = {"sink": "lake", "topic": "t", "partition": 0, "start": 0, "end": 1, "state": "refused", "reason": "r"}
        for what, entries in (("none", []), ("1,001", [good] * (cm.MAX_STATES + 1)),
                              ("waived", [dict(good, state="waived")]),
                              ("a lone surrogate", [dict(good, reason="bad \udcff byte")])):
            with self.subTest(what), self.assertRaises(cm.Rejected) as cx:
                c.record_states(entries)
            self.assertIsNone(cx.exception.status, what)
            self.assertIn("nothing was sent", str(cx.exception), what)
        for what, entry in (("a control character", dict(good, reason="bell\x07")), ("no reason", dict(good, reason="")),
                            ("an unknown state", dict(good, state="covered")), ("an unknown field", dict(good, by="mallory"))):
            with self.subTest(what), self.assertRaises(cm.Rejected) as cx:
                c.record_states([entry])
            self.assertEqual(cx.exception.status, 400, what)
            self.assertIn("nothing was recorded", str(cx.exception), what)
        c.close()


class StatesRetryTest(unittest.TestCase):
    def setUp(self):
        self.proxy = FaultyProxy()
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        self.addCleanup(self.proxy.server_close)
        self.addCleanup(self.proxy.shutdown)
        self.url = "http://127.0.0.1:%d" % self.proxy.server_address[1]
        self.seed = int(os.environ.get("COVMIRROR_SEED") or random.randrange(1 << 62))
        self.r = random.Random(self.seed)

    def test_retries_record_each_entry_once(self):
        """Answers lost after the server recorded are retried with the
        same ids: the Go test counts one event per entry of this topic."""
        c = cm.Client(self.url, max_attempts=20, **fast({"token_file": TOKEN_FILE}))
        topic = "py-states-retry"
        for call in range(8):
            faults = [self.r.choice(["503", "reset", "recorded-then-reset"]) for _ in range(self.r.randrange(5))]
            with self.proxy.lock:
                self.proxy.faults, self.proxy.requests = list(faults), 0
            entries = [{"sink": "lake", "topic": topic, "partition": 0, "start": call * 100 + i * 10, "end": call * 100 + i * 10 + 5,
                        "state": self.r.choice(["refused", "unrecoverable"]), "reason": "seed %d" % self.seed}
                       for i in range(self.r.randrange(1, 6))]
            events = c.record_states(entries)
            self.assertEqual(len(events), len(entries), "seed %d, faults %s" % (self.seed, faults))
            self.assertEqual(self.proxy.requests, len(faults) + 1, "seed %d, faults %s" % (self.seed, faults))
        c.close()


if __name__ == "__main__":
    unittest.main()

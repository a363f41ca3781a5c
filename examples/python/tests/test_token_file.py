"""read_token against the files a token file must not be: a FIFO, a
file past 4096 bytes, one that reads longer than its size says, and a path
holding control characters."""

import os
import tempfile
import threading
import unittest

import covmirror_client as cm


class TokenFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.dir, ignore_errors=True))

    def write(self, name, data, mode=0o600):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path

    def test_fifo_is_refused_without_waiting(self):
        """A FIFO no one writes to is refused at once, never waited on."""
        path = os.path.join(self.dir, "fifo")
        os.mkfifo(path, 0o600)
        got = []

        def read():
            try:
                cm.read_token(path)
                got.append(None)
            except ValueError as e:
                got.append(e)
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(5)
        if t.is_alive():
            # Unblock the reader so that the test process can end.
            with open(path, "wb"):
                pass
            self.fail("read_token waited on a FIFO")
        self.assertIsInstance(got[0], ValueError)
        self.assertIn("not a regular file", str(got[0]))

    def test_other_kinds_are_refused(self):
        for path in (self.dir, "/dev/null"):
            with self.assertRaises(ValueError) as cx:
                cm.read_token(path)
            self.assertIn("not a regular file", str(cx.exception))

    def test_file_past_4096_bytes_is_refused_not_cut(self):
        """A token of 5000 bytes (or a token after 4096 bytes of
        blanks) is refused: cutting it at 4 KiB would send another
        token, and a file that large is not a token file."""
        token = "t" * 5000
        for data in (token.encode(), b" " * 4096 + b"abcdefghijklmnopqrstuvwxyz"):
            path = self.write("big", data)
            with self.assertRaises(ValueError) as cx:
                cm.read_token(path)
            self.assertIn("4096", str(cx.exception))
            self.assertNotIn("tttttttt", str(cx.exception))

    def test_file_that_reads_longer_than_its_size(self):
        """What reads past 4096 bytes whatever its size said (a /proc
        file says 0, a file may grow after fstat) is refused, not cut:
        shown on a pipe's end, past read_token's checks."""
        r, w = os.pipe()
        t = threading.Thread(target=lambda: (os.write(w, b"t" * 5000), os.close(w)), daemon=True)
        t.start()
        try:
            with self.assertRaises(ValueError) as cx:
                cm._read_token_data(r, "pipe")
        finally:
            os.close(r)
            t.join()
        self.assertIn("4096", str(cx.exception))
        self.assertNotIn("tttttttt", str(cx.exception))

    def test_path_is_quoted(self):
        """A path holding a line break or an escape is printed quoted,
        in every refusal."""
        name = "tok\nen\x1b[2J"
        for make in (lambda: self.write(name, b"abcdefghijklmnopqrstuvwxyz", 0o644),
                     lambda: self.write(name, b""),
                     lambda: os.path.join(self.dir, "missing\n\x1b")):
            path = make()
            with self.assertRaises((ValueError, OSError)) as cx:
                cm.read_token(path)
            text = str(cx.exception)
            self.assertNotIn("\n", text)
            self.assertNotIn("\x1b", text)
            if os.path.exists(path):
                os.remove(path)

    def test_a_good_file(self):
        path = self.write("ok", b"abcdefghijklmnopqrstuvwxyz\n")
        self.assertEqual(cm.read_token(path), "abcdefghijklmnopqrstuvwxyz")


if __name__ == "__main__":
    unittest.main()

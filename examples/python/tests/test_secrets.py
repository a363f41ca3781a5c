"""The Python client's redaction and answer bounds, against local servers
that are not the pod: run with the other tests by the Go test
TestPythonClient (COVMIRROR_SEED sets the seed, printed on a failure)."""

import http.server
import json
import os
import random
import socket
import threading
import time
import traceback
import unittest

import covmirror_client as cm

SEED = int(os.environ.get("COVMIRROR_SEED") or random.randrange(1 << 62))
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"


def leaked(out, secret):
    """The first piece of secret in out: whole, or a prefix of 8 bytes or more."""
    for n in range(len(secret), 7, -1):
        if secret[:n] in out:
            return secret[:n]
    return None


class _EchoServer(http.server.ThreadingHTTPServer):
    """Answers every request with status, its body filler[:offset], the
    request's Authorization header, and filler."""

    def __init__(self, filler):
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.filler, self.offset, self.status, self.requests, self.body = filler, 0, 400, 0, None


class _EchoHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        srv.requests += 1
        data = srv.body
        if data is None:
            auth = self.headers.get("Authorization", "")
            data = (srv.filler[:srv.offset] + "Authorization: " + auth + "\r\n" + srv.filler).encode()
        self.send_response(srv.status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass  # the client stopped reading at its bound

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()


class SecretsTest(unittest.TestCase):
    def setUp(self):
        self.r = random.Random(SEED)
        self.token = "".join(self.r.choice(_ALPHABET) for _ in range(24 + self.r.randrange(40)))
        filler = "".join(self.r.choice("abcdefghij klmnopqrstuvwxyz.") for _ in range(cm.MAX_ERROR_BODY + 1024))
        self.srv = _EchoServer(filler)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.addCleanup(self.srv.server_close)
        self.addCleanup(self.srv.shutdown)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]

    def test_echoed_token_at_every_offset(self):
        """The token echoed at every offset around the two cuts (the
        message's 200 bytes, the error answer's 64 KiB read), in a 2xx that
        is not JSON, a refusal and a retried 503: no piece of it of 8 bytes
        or more in the exception, its body or the retry log."""
        offsets = list(range(0, 261)) + list(range(cm.MAX_ERROR_BODY - 100 - len(self.token), cm.MAX_ERROR_BODY + 9))
        c = cm.Client(self.url, token=self.token, max_attempts=2, min_wait=0, max_wait=0)
        for status in (200, 400, 503):
            self.srv.status = status
            for off in offsets:
                self.srv.offset = off
                with self.assertLogs("covmirror_client", level="DEBUG") as logs:
                    cm._log.debug("start")
                    with self.assertRaises(cm.CovmirrorError) as cx:
                        c.gaps()
                for text in [str(cx.exception), repr(cx.exception.body)] + logs.output:
                    piece = leaked(text, self.token)
                    self.assertIsNone(piece, "HTTP %d, token at offset %d: %r of it in %r (COVMIRROR_SEED=%d)" % (status, off, piece, text, SEED))
        c.close()

    def test_redaction_before_every_cut(self):
        """_bounded: a secret at every offset of a text cut at every
        length around it leaves no piece of 8 bytes or more."""
        text = "".join(self.r.choice("abc def") for _ in range(300))
        for off in range(0, 260):
            whole = text[:off] + self.token + text[off:]
            for end in range(max(0, off - 2), min(len(whole), off + len(self.token) + 2)):
                out = cm._bounded(whole[:end], cm.MAX_ERROR_TEXT, (self.token,), end < len(whole))
                self.assertIsNone(leaked(out, self.token), "offset %d, cut at %d: %r (COVMIRROR_SEED=%d)" % (off, end, out, SEED))

    def test_unknown_credentials_by_shape(self):
        """An unknown credential in the shapes _redact knows, at every
        offset of a text cut by a read bound: a URL's password holding a '
        (valid in user information), keys ending in key after a credential's
        word (secret-key, aws_secret_key, private-key) and a presigned URL's
        signature; no piece of it of 8 bytes or more."""
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/%!#$"
        secret = "".join(self.r.choice(alphabet) for _ in range(16 + self.r.randrange(48)))
        filler = "".join(self.r.choice("abcdefghij klmnopqrstuvwxyz.") for _ in range(600))
        for wrap in ("postgres://user:%s'x@db:5432/x ", "postgres://user:x'%s@db:5432/x ", "s3.secret-key=%s&",
                     "aws_secret_key: %s", '"private-key": "%s"', "?X-Amz-Signature=%s&"):
            piece = wrap % secret
            for off in range(0, 300 + len(piece)):
                text = filler[:off] + " " + piece + " " + filler
                read, cut = (text[:300], True) if len(text) > 300 else (text, False)
                for out in (cm._redact(read, (), cut), cm._bounded(read, cm.MAX_ERROR_TEXT, (), cut)):
                    self.assertIsNone(leaked(out, secret), "%r at offset %d: %r (COVMIRROR_SEED=%d)" % (wrap, off, out, SEED))

    def test_encoded_token_never_leaks(self):
        """A token holding the characters JSON and percent-encoding rewrite,
        echoed encoded (JSON string contents with either case of \\u hex, a
        query's or a path's percent-encoding) at every offset around the
        200-byte cut of a text that is itself cut: no piece of it, decoded or
        encoded, of 8 bytes or more."""
        import json
        import re
        import urllib.parse
        tok = list(self.token)
        for i in range(3, len(tok), 6):
            tok[i] = self.r.choice('"\\<>&+/= ;')
        tok = "".join(tok)
        go_json = lambda s: json.dumps(s)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        forms = [json.dumps(s)[1:-1] for s in (tok,)] + [go_json(tok), re.sub(r"\\u00[0-9a-f]{2}", lambda m: m.group(0)[:2] + m.group(0)[2:].upper(), go_json(tok)),
                                                      urllib.parse.quote_plus(tok), urllib.parse.quote(tok, safe=""), re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote_plus(tok))]
        text = "x " * 200
        for enc in forms:
            for wrap in ('{"headers":{"Authorization":["Bearer %s"]}}', "echo %s end"):
                piece = wrap % enc
                for off in range(0, 260):
                    whole = text[:off] + piece + text
                    for end in (len(whole), 250, 300):
                        out = cm._bounded(whole[:end], cm.MAX_ERROR_TEXT, (tok,), end < len(whole))
                        for form in (tok, enc):
                            self.assertIsNone(leaked(out, form), "encoded %r at offset %d, cut at %d: %r (COVMIRROR_SEED=%d)" % (enc, off, end, out, SEED))

    def test_error_answer_fields_that_are_not_text(self):
        """An error answer whose error, rule or entry is not what the API
        gives (an object, a list, a string) echoing the request: no piece of
        the token in the exception, and the exception is the client's."""
        import json
        c = cm.Client(self.url, token=self.token, max_attempts=1)
        self.srv.status = 400
        for doc in ({"error": {"Authorization": "Bearer " + self.token}},
                    {"error": "refused", "rule": ["Bearer " + self.token]},
                    {"error": "refused", "rule": {"h": self.token}},
                    {"error": "refused", "entry": "Bearer " + self.token},
                    {"error": ["x", {"t": self.token}], "entry": 1.5}):
            self.srv.body = json.dumps(doc).encode()
            with self.assertRaises(cm.CovmirrorError) as cx:
                c.gaps()
            for text in (str(cx.exception), repr(cx.exception.body), repr(cx.exception.error), repr(cx.exception.rule)):
                self.assertIsNone(leaked(text, self.token), "answer %r: the token in %r (COVMIRROR_SEED=%d)" % (doc, text, SEED))
        self.srv.body = None
        c.close()

    def test_server_text_is_quoted(self):
        """An error answer's error and rule, the API's JSON or a body that
        is not, holding a line break, a terminal's escape, a C1 control and
        a right-to-left override: the exception and the retry log print
        them escaped (repr), never as themselves; the fields keep them."""
        import json
        hostile = 'refused\nWARNING:covmirror_client:forged line \x1b[2J\x9b31m\u202egnp.exe'
        c = cm.Client(self.url, max_attempts=2, min_wait=0, max_wait=0)
        for status, body in ((400, json.dumps({"error": hostile, "rule": "r\n" + hostile, "entry": 0})),
                             (400, hostile), (503, json.dumps({"error": hostile, "rule": "x\x1b[2J"})), (503, hostile)):
            self.srv.status, self.srv.body = status, body.encode()
            with self.assertLogs("covmirror_client", level="DEBUG") as logs:
                cm._log.debug("start")
                with self.assertRaises(cm.CovmirrorError) as cx:
                    c.gaps()
            for text in [str(cx.exception)] + logs.output:
                bad = [ch for ch in text if not ch.isprintable()]
                self.assertEqual(bad, [], "HTTP %d %r: printed as itself in %r" % (status, body, text))
            if body.startswith("{") and status == 400:
                self.assertEqual(cx.exception.error, hostile)
        self.srv.body = None
        c.close()

    def test_transport_error_is_bounded(self):
        """An answer whose status line does not parse (60 KB of it, which
        http.client's error quotes whole): the exception and each retry's
        log line stay short."""
        port, _ = _raw_server(self, b"HTTP/1.1 2" + b"0" * 60000 + b" OK\r\n\r\n", b"", b"")
        c = cm.Client("http://127.0.0.1:%d" % port, max_attempts=2, min_wait=0, max_wait=0)
        with self.assertLogs("covmirror_client", level="WARNING") as logs:
            with self.assertRaises(cm.Unavailable) as cx:
                c.gaps()
        self.assertLess(len(str(cx.exception)), 4096)
        for line in logs.output:
            self.assertLess(len(line), 4096)
        c.close()

    def test_traceback_never_carries_an_echoed_token(self):
        """A server whose status line is the request's Authorization line:
        neither the exception nor its traceback, causes included, holds
        the token (http.client's own error quotes the line whole)."""
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen()
        self.addCleanup(ls.close)

        def serve():
            while True:
                try:
                    s, _ = ls.accept()
                except OSError:
                    return
                with s:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        got = s.recv(1 << 16)
                        if not got:
                            break
                        data += got
                    auth = [l for l in data.split(b"\r\n") if l.lower().startswith(b"authorization")]
                    s.sendall((auth or [b"none"])[0] + b"\r\n\r\n")

        threading.Thread(target=serve, daemon=True).start()
        for attempts in (1, 2):
            with self.subTest(max_attempts=attempts):
                c = cm.Client("http://127.0.0.1:%d" % ls.getsockname()[1], token=self.token,
                              max_attempts=attempts, min_wait=0, max_wait=0)
                with self.assertLogs("covmirror_client", level="WARNING") as logs:
                    cm._log.warning("the logs of this call:")
                    with self.assertRaises(cm.Unavailable) as cx:
                        c.gaps()
                out = "".join(traceback.format_exception(type(cx.exception), cx.exception, cx.exception.__traceback__))
                out += "\n".join(logs.output)
                self.assertIn("BadStatusLine", out)
                self.assertIsNone(leaked(out, self.token), "seed %d: %s" % (SEED, out))
                c.close()

    def test_record_count_echo_is_not_printed(self):
        """A 200 whose recorded is not a count (an echo of the request's
        Authorization): BadAnswer, without that value."""
        self.srv.status = 200
        self.srv.body = b""
        for bad in ("Bearer " + self.token, [self.token], {"t": self.token}, True):
            with self.subTest(bad=type(bad).__name__):
                self.srv.body = json.dumps({"recorded": bad}).encode()
                c = cm.Client(self.url, token=self.token, max_attempts=1)
                with self.assertRaises(cm.BadAnswer) as cx:
                    c.record([{"sink": "lake", "topic": "orders", "partition": 0, "start": 0, "end": 1}])
                self.assertIsNone(leaked(str(cx.exception), self.token), "seed %d: %s" % (SEED, cx.exception))
                self.assertIn("no count", str(cx.exception))
                c.close()

    def test_success_answer_is_bounded(self):
        """A 2xx past max_answer raises BadAnswer after one request: not
        decoded, not retried; past the default, 64 MiB, too."""
        for max_answer, size in ((1 << 20, 3 << 20), (None, 96 << 20)):
            self.srv.status, self.srv.requests = 200, 0
            self.srv.body = b'{"found": true, "cursor": "' + b"c" * size + b'", "raw_end": 1}'
            kwargs = {} if max_answer is None else {"max_answer": max_answer}
            c = cm.Client(self.url, max_attempts=3, min_wait=0, max_wait=0, **kwargs)
            with self.assertRaises(cm.BadAnswer) as cx:
                c.get_position("files", 0)
            self.assertIn("max_answer", str(cx.exception))
            self.assertEqual(self.srv.requests, 1, "an answer past the bound was asked again")
            c.close()
        self.srv.body = None


    def test_trickled_answer_ends_by_the_timeout(self):
        """A 2xx sent a few bytes at a time, each well within the socket
        timeout, is cut off by the attempt's timeout (Unavailable after
        max_attempts), never read for as long as the server likes."""
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TrickleHandler)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            c = cm.Client("http://127.0.0.1:%d" % srv.server_address[1], timeout=0.5, max_attempts=2, min_wait=0, max_wait=0)
            with self.assertRaises(cm.Unavailable):
                c.get_position("files", 0)
            c.close()
        finally:
            srv.shutdown()
            srv.server_close()


    def test_sink_with_a_comma_is_refused(self):
        """A sink name holding a comma is refused before sending: the API's
        sinks parameter separates names by commas, so "lake,eu" would be
        asked as the sinks "lake" and "eu"."""
        self.srv.requests = 0
        c = cm.Client(self.url, max_attempts=1)
        for call in (lambda: c.gaps(sinks=["lake,eu"]), lambda: c.plan(sinks=["raw", "lake,eu"])):
            with self.assertRaises(ValueError):
                call()
        self.assertEqual(self.srv.requests, 0, "a request was sent")
        c.close()

    def test_trickled_headers_and_trailers_end_by_the_timeout(self):
        """An answer whose header line, chunk size line or trailer is sent
        a few bytes at a time (10 s in all), each within the socket
        timeout, is cut off by the attempt's timeout (Unavailable), never
        read to its end: http.client reads those parts under the socket
        timeout alone, which restarts at every byte."""
        for name, head, piece, tail in (
                ("a header line", b"HTTP/1.1 200 OK\r\nX-Pad: ", b"p", b"\r\nContent-Length: 2\r\n\r\n{}"),
                ("a chunk size line", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2", b";", b"\r\n{}\r\n0\r\n\r\n"),
                ("trailer lines", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n", b"T: t\r\n", b"\r\n")):
            with self.subTest(name):
                port, answers = _raw_server(self, head, piece, tail)
                c = cm.Client("http://127.0.0.1:%d" % port, timeout=0.5, max_attempts=1)
                with self.assertRaises(cm.Unavailable):
                    c.get_position("files", 0)
                c.close()
                t, sent = answers[0]
                t.join()
                self.assertFalse(sent, "the client read the trickled answer to its end, past its timeout")


def _raw_server(test, head, piece, tail):
    """A server that answers each request with head, then piece 200 times
    50 ms apart, then tail: 10 s in all. Returns its port and its answers,
    each (thread, sent): sent is set once the tail is sent, the client
    still reading."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen()
    test.addCleanup(ls.close)

    answers = []

    def answer(s, sent):
        with s:
            try:
                s.recv(1 << 16)
                s.sendall(head)
                for _ in range(200):
                    s.sendall(piece)
                    time.sleep(0.05)
                s.sendall(tail)
                s.shutdown(socket.SHUT_WR)
                if not s.recv(1):
                    sent.append(True)  # the client kept reading to the end
            except OSError:
                pass  # the client gave up

    def accept():
        while True:
            try:
                s, _ = ls.accept()
            except OSError:
                return
            sent = []
            t = threading.Thread(target=answer, args=(s, sent), daemon=True)
            answers.append((t, sent))
            t.start()

    threading.Thread(target=accept, daemon=True).start()
    return ls.getsockname()[1], answers


class _TrickleHandler(http.server.BaseHTTPRequestHandler):
    """A JSON answer of 400 bytes, 4 bytes every 50 ms: 5 s in all."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b'{"found": false, "pad": "' + b"p" * 372 + b'"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for i in range(0, len(body), 4):
                self.wfile.write(body[i:i + 4])
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass


if __name__ == "__main__":
    unittest.main()


class QuotedValueTest(unittest.TestCase):
    def test_quoted_value_whole(self):
        """A credential's value in double quotes is replaced to its closing
        quote (spaces and escaped quotes included), or to the end of its
        line in a text cut before it, as the Go redaction does."""
        r = random.Random(SEED)
        word = lambda: "".join(r.choice(_ALPHABET) for _ in range(6 + r.randrange(6)))
        for _ in range(500):
            words = [word(), word(), word()]
            value = " ".join(words) if r.randrange(2) else words[0] + ' \\"' + words[1] + '\\" ' + words[2]
            key = r.choice(['"password"', "password", '"token"', "client_secret", '"private_key"', "api-key"])
            text = '{"user": "u", ' + key + r.choice([": ", ":", " = ", "="]) + '"' + value + '", "host": "h"}'
            cut = r.randrange(3) == 0
            if cut:
                text = text[:text.index(words[2]) + len(words[2])]
            got = cm._redact(text, (), cut)
            for w in words:
                self.assertNotIn(w, got, "seed %d: %r" % (SEED, text))
            if not cut:
                self.assertIn('"host": "h"', got, "seed %d: %r" % (SEED, text))

"""A client for covmirror's record API (`covmirror serve`), standard library only.

Record a sink's batches only after the sink durably acknowledged them:
coverage may lag, never lead.

    from covmirror_client import Client, CovmirrorError
    c = Client("http://127.0.0.1:9464")          # or Client(socket="/run/covmirror.sock")
    c = Client("http://127.0.0.1:9464", token_file="/etc/covmirror/token")  # serve --token-file
    c.record([{"sink": "lake", "topic": "orders", "partition": 0, "start": 0, "end": 100}])
    c.checkpoint()                                # {"checkpoints": 1, "batches": 100, ...}
    c.gaps(sink="lake")                           # [{"sink", "topic", "partition", "start", "end", "kind"}]
    acked = [{"topic": "orders", "partition": 0, "end": 100}]  # the source's acked extents
    c.plan(extents=acked)                         # tasks: kind "replay" or "verify-reference"
    c.put_extents(acked)                          # kept by the pod for every later look
    c.committed(sink="lake")                      # committed coverage rows
    c.put_position("files", 0, "file-0099", raw_end=100)
    c.get_position("files", 0)                    # {"found": true, "cursor": ..., "raw_end": ...}

The semantics are those of the Go client (package sidecar/client):

- record() is all or nothing: an invalid entry raises Rejected naming the
  entry and the server's rule, and nothing is recorded. A return means the
  pod's local tier accepted every entry; any exception means maybe
  recorded, maybe not: a lag, which recovery finds as a gap. Record the
  entries again or leave them to recovery; never count them as recorded.
- Every call is retried, up to max_attempts with a capped, jittered
  exponential wait, on a transport error (refused, reset, timed out) and
  on 408, 429 and every 5xx (503 when the pod shuts down): safe, because
  recording twice is harmless (coverage is a union). A refusal (another
  4xx) is never retried.
- The token (token_file= or token=) is sent over TCP only, never logged
  nor put in an exception, whole or in part: an answer's text is redacted
  (_redact, the twin of the Go module's internal/redact) before it is
  shortened.
- Every answer read is bounded: a successful one by max_answer (64 MiB by
  default; past it BadAnswer, not retried), an error answer at 64 KiB, of
  which the message keeps the first 200 bytes, a transport error's at 1
  KiB; and in time, by the attempt's timeout, however slowly the server
  sends it. An exception prints the server's error and rule quoted (repr).
- token_file is read as serve reads --token-file (read_token): a regular
  file (a FIFO is refused, never waited on) of at most 4096 bytes.

Every error answer raises a CovmirrorError with the server's JSON error:
its status, message, rule, the entry at fault for a refused record batch
and, for one the local tier failed midway, how many were recorded. Its
subclasses: Rejected (a 4xx but 401, 408 and 429, or refused before
sending: status None), Unauthorized (401: the token), Unavailable (every
attempt failed: status None after transport errors) and BadAnswer (not
the record API's answer: a redirect, a body not its JSON, a count that
does not match).
"""

import http.client
import io
import json
import logging
import random
import re
import socket as _socket
import sys
import time
import unicodedata
import urllib.parse
import uuid

_log = logging.getLogger("covmirror_client")

DEFAULT_MAX_ATTEMPTS = 8  # with the waits below: up to about 11 s, a pod's restart
MIN_RETRY_WAIT = 0.1      # seconds, doubled per retry ...
MAX_RETRY_WAIT = 5.0      # ... up to this; each wait a random time below it
DEFAULT_MAX_ANSWER = 64 << 20  # bytes of a successful answer read, at most
MAX_ERROR_BODY = 64 << 10      # bytes of an error answer read, at most
MAX_ERROR_TEXT = 200           # bytes of an answer that is not the API's put in a message
MAX_TRANSPORT_TEXT = 1024      # bytes of a transport error put in a message
MAX_STATES = 1000              # gap states in one record_states call, as the server bounds them

# The redaction, the twin of the Go module's internal/redact (same rules):
# every secret given, and every credential's shape, replaced by _MARK in
# the whole text before it is cut; a text cut short loses a tail that could
# begin a secret or a URL's user information.
_MARK = "[redacted]"
_MIN_SECRET = 4
_SHAPES = [
    (re.compile(r'(?i)(authorization"?\s*[:=]\s*"?)[^\r\n"]*'), r"\g<1>" + _MARK),
    (re.compile(r"""(?i)(\bbearer\s+)[^\s"',;]+"""), r"\g<1>" + _MARK),
    (re.compile(r"""(?i)(\b[a-z][a-z0-9+.-]*://)[^\s"<>]*@"""), r"\g<1>" + _MARK + "@"),
    (re.compile(r"""(?i)((?:(?:password|passwd|pwd|token|secret|credentials?|signature|\bsig)(?:[-_.]?key)?|(?:access|api|private)[-_.]?key)"?\s*[:=]\s*)(?:(")(?:[^"\\\r\n]|\\.)*"?|'(?:[^'\\]|\\.)*'|[^\s"',;&]+)"""), r"\g<1>\g<2>" + _MARK + r"\g<2>"),
]
_OPEN_AUTHORITY = re.compile(r"""(?i)\b[a-z][a-z0-9+.-]*://[^\s"<>@]*$""")


def _redact(text, secrets=(), cut=False):
    """text (str or bytes) with every credential replaced: each of secrets
    wherever it occurs, and what has a credential's shape. cut: text was
    cut short at its end (a bounded read)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    secrets = _encoded(x for x in secrets if x)
    for sec in sorted((x for x in secrets if len(x) >= _MIN_SECRET), key=len, reverse=True):
        text = text.replace(sec, _MARK)
    if cut:
        # The longest tail that begins any of them: a secret's encoded
        # forms share its start.
        longest = 0
        for sec in secrets:
            for n in range(min(len(sec) - 1, len(text)), longest, -1):
                if text.endswith(sec[:n]):
                    longest = n
                    break
        if longest:
            text = text[:-longest] + _MARK
        m = _OPEN_AUTHORITY.search(text)
        if m:
            text = text[:m.start()] + _MARK
    for shape, repl in _SHAPES:
        text = shape.sub(repl, text)
    return text


_JSON_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")
_PERCENT_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def _encoded(secrets):
    """secrets with the forms an echo may give each back in: JSON string
    contents (Go's \\u003c for <, > and &, or not; either case of hex) and
    percent-encoding (a query's and a path's, either case of hex)."""
    out = []
    for sec in secrets:
        plain = json.dumps(sec)[1:-1]
        html = plain.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        forms = [sec]
        for form, esc in ((plain, _JSON_ESCAPE), (html, _JSON_ESCAPE), (urllib.parse.quote_plus(sec), _PERCENT_ESCAPE),
                          (urllib.parse.quote(sec, safe=""), _PERCENT_ESCAPE), (urllib.parse.quote(sec, safe="/"), _PERCENT_ESCAPE)):
            forms += [form] + [esc.sub(lambda m, to=to: m.group(0)[:-2 if m.group(0)[0] == "%" else -4] + to(m.group(0)[-2 if m.group(0)[0] == "%" else -4:]), form)
                               for to in (str.upper, str.lower)]
        out += [f for f in forms if f not in out]
    return out


def _bounded(text, n, secrets=(), cut=False):
    """_redact(text, secrets, cut), then cut to n bytes of UTF-8: the
    redaction first, so that no cut leaves a piece of a secret."""
    text = _redact(text, secrets, cut)
    data = text.encode("utf-8")
    if len(data) <= n:
        return text
    return data[:n].decode("utf-8", "ignore") + "..."


class CovmirrorError(Exception):
    """An error answer of the record API (status None: no answer)."""

    def __init__(self, status, body, route=None):
        self.status = status
        self.route = route
        self.body = body if isinstance(body, dict) else {"error": str(body)}
        self.error = self.body.get("error", "")
        self.rule = self.body.get("rule")
        self.entry = self.body.get("entry")
        self.recorded = self.body.get("recorded")
        where = "" if self.entry is None else " (entry %d)" % self.entry
        what = "HTTP %d" % status if status is not None else "no answer"
        # error and rule quoted (repr): a server's text, whose line break or
        # terminal escape would otherwise forge a log line or act on a terminal.
        super().__init__("covmirror: %s%s%s: %r [rule %r]" % (route + ": " if route else "", what, where, self.error, self.rule))


class Rejected(CovmirrorError):
    """The request was refused and nothing was recorded: fix it (rule says why)."""


class Unauthorized(CovmirrorError):
    """401: the token is missing or wrong."""


class Unavailable(CovmirrorError):
    """Every attempt failed on the transport or with 408, 429 or a 5xx: maybe recorded."""


class BadAnswer(CovmirrorError):
    """The answer is not the record API's: maybe recorded; check the address."""


def _count(v):
    """v if it is an index or a count (an int, 0 or more), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _retryable(status):
    return status in (408, 429) or 500 <= status <= 599


def _error_class(status):
    if status == 401:
        return Unauthorized
    if _retryable(status):
        return Unavailable
    if 400 <= status <= 499:
        return Rejected
    return BadAnswer


class _DeadlineSocket:
    """A connected socket whose every send and receive waits at most the
    time left to deadline (time.monotonic(); None: the socket's timeout
    alone). http.client reads a status line, each header, a chunk's size
    line and a trailer a recv at a time under the socket's timeout, which
    restarts at every byte: a server that trickles them, or sends trailer
    lines without end, would hold the attempt for as long as it likes."""

    def __init__(self, sock):
        self._sock, self.deadline = sock, None
        self._files, self._closed = 0, False

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def _arm(self):
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the answer was not read whole within the attempt's timeout")
            self._sock.settimeout(left)

    def sendall(self, data, *args):
        self._arm()
        return self._sock.sendall(data, *args)

    def makefile(self, mode="rb", *args, **kwargs):
        self._files += 1
        return io.BufferedReader(_DeadlineReader(self))

    def close(self):
        # As a socket does: closed once its files are (http.client closes
        # the connection's socket before a Connection: close answer is read).
        self._closed = True
        if self._files == 0:
            self._sock.close()

    def _file_closed(self):
        self._files -= 1
        if self._closed and self._files == 0:
            self._sock.close()


class _DeadlineReader(io.RawIOBase):
    def __init__(self, sock):
        super().__init__()
        self._s = sock

    def readable(self):
        return True

    def readinto(self, b):
        self._s._arm()
        return self._s._sock.recv_into(b)

    def close(self):
        if not self.closed:
            self._s._file_closed()
        super().close()


class _Connection(http.client.HTTPConnection):
    """HTTPConnection whose socket is a _DeadlineSocket: set_deadline bounds
    the whole of the next request and its answer, headers included."""

    def connect(self):
        super().connect()
        self.sock = _DeadlineSocket(self.sock)

    def set_deadline(self, deadline):
        if self.sock is None:
            self.connect()
        self.sock.deadline = deadline


class _UnixConnection(_Connection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = _DeadlineSocket(s)


def _sinks(sinks):
    """sinks as the API's query parameter: names separated by commas."""
    if isinstance(sinks, str):
        raise ValueError("sinks is a list of sink names, not a string")
    for s in sinks or ():
        # The parameter separates names by commas: "lake,eu" would be
        # asked as the sinks "lake" and "eu".
        if "," in s:
            raise ValueError("sink name %r holds a comma: the API's sinks parameter separates names by commas, so it cannot be asked for; nothing was sent" % (s,))
    return ",".join(sinks) if sinks else None  # none: serve's --sinks


def _topic_sinks(topic_sinks):
    """topic_sinks as the API's repeated topic-sinks parameter: one
    ("topic-sinks", "TOPIC=SINK,SINK") pair per topic, an empty list
    naming none for its topic."""
    if topic_sinks is None:
        return []
    if not isinstance(topic_sinks, dict):
        raise ValueError("topic_sinks is a dict of topic to a list of sink names")
    out = []
    for topic in sorted(topic_sinks):
        if "=" in topic:
            raise ValueError("topic %r holds an =: the API's topic-sinks parameter is TOPIC=SINK,SINK, split at the first =, so it cannot be asked for; nothing was sent" % (topic,))
        out.append(("topic-sinks", topic + "=" + (_sinks(topic_sinks[topic]) or "")))
    return out


MAX_TOKEN_FILE = 4096  # bytes of a token file, at most, as serve reads its --token-file


def read_token(path):
    """The bearer token in path, as serve reads its --token-file: a regular
    file (never a FIFO or a device, which could hold the call forever), of
    at most MAX_TOKEN_FILE bytes (a longer one is refused, never cut to
    another token), not readable or writable by group or others. Every
    message quotes the path (repr) and never the file's text."""
    import os
    import stat
    path = os.fspath(path)
    # O_NONBLOCK: opening a FIFO no one writes to returns at once, and
    # fstat then refuses it; a plain open would wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("token file %r is not a regular file: give the file serve's --token-file reads" % (path,))
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o066:
            raise ValueError("token file %r has mode %04o: group or others may read or change it; chmod 600 it" % (path, mode))
        if st.st_size > MAX_TOKEN_FILE:
            raise ValueError("token file %r is %d bytes, not a token (at most %d)" % (path, st.st_size, MAX_TOKEN_FILE))
        return _read_token_data(fd, path)
    finally:
        os.close(fd)


def _read_token_data(fd, path):
    """The token read from fd: refused past MAX_TOKEN_FILE bytes read, since
    a file's size can say less than it holds (/proc's say 0) or grow after
    fstat, and cutting it would send another token."""
    import os
    chunks, got = [], 0
    while got <= MAX_TOKEN_FILE:
        b = os.read(fd, MAX_TOKEN_FILE + 1 - got)
        if not b:
            break
        chunks.append(b)
        got += len(b)
    if got > MAX_TOKEN_FILE:
        raise ValueError("token file %r holds more than %d bytes, not a token" % (path, MAX_TOKEN_FILE))
    try:
        token = b"".join(chunks).decode("ascii").strip()
    except UnicodeDecodeError:
        raise ValueError("token file %r holds a byte that is not ASCII: an Authorization header cannot carry it" % (path,)) from None
    if not token:
        raise ValueError("token file %r is empty" % (path,))
    return token


def _check_text(what, value, entry=None):
    """Refuses text JSON would carry as another name: a lone surrogate
    (from bytes decoded with surrogateescape) reaches the server as U+FFFD."""
    if not isinstance(value, str):
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        where = "" if entry is None else "entry %d: " % entry
        raise Rejected(None, {"error": where + "the %s is not valid UTF-8 text; nothing was sent" % what,
                              "rule": "invalid-utf8", "entry": entry}) from None


def _check_name(what, value, entry=None):
    """The server's name rule (coverage.ValidName), checked before sending:
    UTF-8 text without a control character (NUL, C0, DEL or C1), which would
    forge a line or act on a terminal where the name is printed."""
    _check_text(what, value, entry)
    if not isinstance(value, str):
        return
    for i, ch in enumerate(value):
        if unicodedata.category(ch) == "Cc":
            where = "" if entry is None else "entry %d: " % entry
            raise Rejected(None, {"error": where + "the %s %r has the control character U+%04X at character %d: names hold no NUL, C0 or C1 control or DEL; nothing was sent" % (what, value, ord(ch), i),
                                  "rule": "invalid-destination", "entry": entry})


def _read_within(conn, resp, n, deadline):
    """Up to n bytes of resp's body, by deadline (time.monotonic()): each
    read waits at most the time left, so a server that trickles its answer
    a byte at a time still ends the attempt by its timeout (TimeoutError,
    retried as any transport error)."""
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer was not read whole within the attempt's timeout")
        if conn.sock is not None:
            conn.sock.settimeout(left)
        b = resp.read1(min(1 << 16, n - got))
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


class Client:
    """The record API over TCP (url) or a Unix socket (socket).

    token_file (or token): the bearer token of serve's --token-file, sent
    as Authorization on every request over TCP (the socket needs none).
    timeout: seconds per attempt. max_attempts: attempts per call, the
    first included (1: never retry). max_answer: the bytes of a successful
    answer read, at most; a longer one raises BadAnswer, not retried."""

    def __init__(self, url=None, socket=None, timeout=60.0, token_file=None, token=None,
                 max_attempts=DEFAULT_MAX_ATTEMPTS, min_wait=MIN_RETRY_WAIT, max_wait=MAX_RETRY_WAIT,
                 max_answer=DEFAULT_MAX_ANSWER):
        if (url is None) == (socket is None):
            raise ValueError("give url (http://host:port, serve's --addr) or socket (serve's --socket): one of them, not both")
        if token_file is not None:
            token = read_token(token_file)
        if token is not None and (not token or any(c <= " " or c > "~" for c in token)):
            raise ValueError("the token must be visible ASCII (read the token file without its trailing newline)")
        if max_attempts < 1:
            raise ValueError("max_attempts is %r: give 1 or more" % (max_attempts,))
        if not isinstance(max_answer, int) or max_answer < 1:
            raise ValueError("max_answer is %r: give 1 or more bytes" % (max_answer,))
        self._max_answer = max_answer
        self._token = token if socket is None else None
        self._timeout = timeout
        self._max_attempts, self._min_wait, self._max_wait = max_attempts, min_wait, max_wait
        if socket is not None:
            self._connect = lambda: _UnixConnection(socket, timeout)
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme != "http" or not u.hostname or u.username or u.password or u.path not in ("", "/") or u.query:
                # Never the url itself: it could hold a password.
                raise ValueError("url must be http://host:port, the server's root (serve's --addr)")
            self._connect = lambda: _Connection(u.hostname, u.port or 80, timeout=timeout)
        self._conn = None

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _attempt(self, method, path, body, headers):
        """One request: (status, headers, body bytes, cut); OSError and
        http.client's errors on the transport. The body is read up to its
        bound (max_answer for a 2xx, MAX_ERROR_BODY else): cut says there
        was more, and the connection, holding the rest, is closed."""
        if self._conn is None:
            self._conn = self._connect()
        resp = None
        try:
            # One deadline for the request and the whole answer, its
            # headers and a chunked body's trailer included.
            deadline = time.monotonic() + self._timeout
            self._conn.set_deadline(deadline)
            self._conn.request(method, path, body=body, headers=headers)
            resp = self._conn.getresponse()
            bound = self._max_answer if 200 <= resp.status < 300 else MAX_ERROR_BODY
            data = _read_within(self._conn, resp, bound + 1, deadline)
        except BaseException:
            if resp is not None:
                resp.close()  # its file holds the socket open
            self.close()
            raise
        cut = len(data) > bound
        if cut:
            data = data[:bound]
        if cut or not resp.isclosed() or resp.getheader("Connection", "").lower() == "close":
            self.close()
        return resp.status, resp, data, cut

    def _request(self, method, path, body=None, content_type="application/json", want_headers=False):
        headers = {"Accept": "application/json"}
        if method not in ("GET", "HEAD"):
            # Every write says its type, a body or not: the server refuses
            # a write without one (what a browser's page could send).
            headers["Content-Type"] = content_type
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        route = "%s %s" % (method, path.split("?", 1)[0])
        attempt = 0
        while True:
            attempt += 1
            secrets = (self._token,) if self._token else ()
            try:
                status, resp, data, cut = self._attempt(method, path, body, headers)
            except (OSError, http.client.HTTPException) as e:
                # Refused, reset, timed out, or an answer cut off: the
                # request may have been recorded, and again is harmless.
                # Bounded: http.client's error quotes a status line it could
                # not parse, up to 64 KiB.
                # Not chained to e: a traceback prints a cause whole, and
                # http.client's quotes the line it could not parse, an echo
                # of the request's Authorization among them.
                last = Unavailable(None, {"error": _bounded("%s: %s" % (type(e).__name__, e), MAX_TRANSPORT_TEXT, secrets), "rule": None}, route)
            else:
                if 200 <= status < 300:
                    if cut:
                        raise BadAnswer(status, {"error": "the answer is over %d bytes, max_answer: not an answer of the record API, or raise max_answer (or narrow the query by sink, topic or partition)" % self._max_answer}, route)
                    try:
                        doc = json.loads(data) if data else None
                    except ValueError:
                        # An address that is not the pod may echo the
                        # request: redacted before it is cut.
                        raise BadAnswer(status, {"error": "the answer is not the record API's JSON: %r" % _bounded(data, MAX_ERROR_TEXT, secrets)}, route) from None
                    return (doc, resp) if want_headers else doc
                try:
                    doc = json.loads(data) if data and not cut else None
                except ValueError:
                    doc = None
                if not isinstance(doc, dict) or not isinstance(doc.get("error"), str):
                    text = _bounded(data, MAX_ERROR_TEXT, secrets, cut).strip() or http.client.responses.get(status, "")
                    doc = {"error": text + " (not an answer of the record API: does the address name the pod's serve?)"}
                else:
                    # The API's fields only, each of its type: anything else
                    # is an echo the exception must not carry.
                    doc = {"error": _redact(doc["error"], secrets),
                           "rule": _redact(doc["rule"], secrets) if isinstance(doc.get("rule"), str) else None,
                           "entry": _count(doc.get("entry")), "recorded": _count(doc.get("recorded"))}
                # A redirect is not success either: ServeMux answers 307 for
                # a path it would clean, and following it would address
                # another resource.
                last = _error_class(status)(status, doc, route)
                if not _retryable(status):
                    raise last
            if attempt >= self._max_attempts:
                raise Unavailable(last.status, dict(last.body, error="%s failed %d times, the last: %s; the request may or may not have taken effect (records then lag: send them again)" % (route, attempt, last.error)), route) from last
            wait = random.uniform(0, min(self._max_wait, self._min_wait * 2 ** (attempt - 1)))
            _log.warning("covmirror: retrying %s after attempt %d of %d in %.3fs: %s", route, attempt, self._max_attempts, wait, last)
            time.sleep(wait)

    def record(self, entries):
        """Records ranges the sinks have durably acknowledged: all or nothing.

        Call it only after the sink's durable ack of every entry.
        entries: dicts with sink, topic, partition, start, end (half-open).
        Returns the number recorded, len(entries); raises Rejected naming
        the entry and rule of an invalid one (nothing was recorded then),
        and any other CovmirrorError when the outcome is unknown (a lag:
        record them again)."""
        entries = list(entries)
        return self._record(entries, json.dumps(entries).encode(), "application/json")

    def record_ndjson(self, entries):
        """record(), sent as NDJSON (one entry per line)."""
        entries = list(entries)
        body = "".join(json.dumps(e) + "\n" for e in entries).encode()
        return self._record(entries, body, "application/x-ndjson")

    def _record(self, entries, body, content_type):
        for i, e in enumerate(entries):
            if isinstance(e, dict):
                _check_name("sink name", e.get("sink"), i)
                _check_name("topic name", e.get("topic"), i)
        ans = self._request("POST", "/v1/records", body, content_type)
        # A count or nothing: any other value is an echo, never printed.
        got = _count(ans.get("recorded")) if isinstance(ans, dict) else None
        if got != len(entries):
            said = "no count" if got is None else "%d" % got
            raise BadAnswer(200, {"error": "the answer says %s recorded of %d entries sent: treat them as not recorded" % (said, len(entries))}, "POST /v1/records")
        return got

    def record_states(self, entries):
        """Records gap states a replay cannot undo: all or nothing, durable
        once it returns (POST /v1/states). Never coverage: a refused range
        stays a gap, out of the replay plan until reopened or covered.

        entries: dicts with sink, topic, partition, start, end (half-open),
        state ("refused": the sink refused these batches for ever;
        "unrecoverable": raw no longer holds them; "reopened": back into the
        plan) and reason (required: the sink's error or your words). A
        waiver is an operator's act: `covmirror waive`. Each entry without
        an id is given one here, so this call's own retries record it once.
        Returns the events as recorded, each with id, by (the pod) and at;
        raises Rejected (nothing recorded) for an invalid entry, and any
        other CovmirrorError when the outcome is unknown: call again (give
        each entry an "id" yourself to make that call record it once too)."""
        entries = [dict(e) for e in entries]
        if not entries:
            raise Rejected(None, {"error": "no states to record; nothing was sent", "rule": "invalid-state"})
        if len(entries) > MAX_STATES:
            raise Rejected(None, {"error": "%d states in one call, more than %d: split them; nothing was sent" % (len(entries), MAX_STATES),
                                  "rule": "invalid-state"})
        for i, e in enumerate(entries):
            for what, key in (("sink name", "sink"), ("topic name", "topic")):
                _check_name(what, e.get(key), i)
            for what, key in (("reason", "reason"), ("state", "state")):
                _check_text(what, e.get(key), i)
            if e.get("state") == "waived":
                raise Rejected(None, {"error": "entry %d: a waiver is an operator's decision: use `covmirror waive` with a reason; nothing was sent" % i,
                                      "rule": "invalid-state", "entry": i})
            e.setdefault("id", uuid.uuid4().hex)
        ans = self._request("POST", "/v1/states", json.dumps({"states": entries}).encode())
        ans = ans if isinstance(ans, dict) else {}
        events = ans.get("events")
        if ans.get("recorded") != len(entries) or not isinstance(events, list) or len(events) != len(entries):
            raise BadAnswer(200, {"error": "the answer does not say all %d states were recorded: treat them as not recorded" % len(entries)}, "POST /v1/states")
        return events

    def checkpoint(self):
        return self._request("POST", "/v1/checkpoint")

    def _recovery(self, route, extents, params):
        q = [(k, v) for k, v in params if v is not None]
        path = route + ("?" + urllib.parse.urlencode(q) if q else "")
        if extents is not None:
            return self._request("POST", path, json.dumps(list(extents)).encode())
        return self._request("GET", path)

    def gaps(self, reference=None, sink=None, topic=None, partition=None, extents=None, sinks=None, all=False, topic_sinks=None):
        """The committed gaps, each with its kind (replay, or verify-reference
        for a hole in raw). extents: the source's acked extents, dicts with
        topic, partition, end and optionally start: raw's holes are looked
        for over them too, so a lost first or last stretch is found. sinks:
        the sinks every topic is written to, besides those with rows (a
        sink with no rows of a topic has gaps only when named; default:
        serve's --sinks). topic_sinks: {topic: [sink, ...]}, the sinks a
        topic is written to in place of sinks there ([] for none); sinks or
        topic_sinks given replaces serve's --sinks and --topic-sinks whole.
        A gap a replay cannot close has the kind refused or unrecoverable
        (waived too with all=True) and its decision {event, reason, by,
        at}."""
        return self._recovery("/v1/gaps", extents, (("reference", reference), ("sink", sink), ("topic", topic), ("partition", partition),
                                                     ("sinks", _sinks(sinks)), ("all", "1" if all else None), *_topic_sinks(topic_sinks)))

    def plan(self, extents=None, reference=None, max_batches=None, max_tasks=None, sinks=None, topic_sinks=None):
        """The recovery plan: tasks {sink, topic, partition, start, end, kind}.
        Verify a verify-reference task against raw and record what it holds;
        replay a replay task from raw and record it after the sink's ack;
        checkpoint; plan again until the plan is empty. sinks, topic_sinks:
        as gaps()."""
        return self._recovery("/v1/plan", extents, (("reference", reference), ("max_batches", max_batches), ("max_tasks", max_tasks),
                                                    ("sinks", _sinks(sinks)), *_topic_sinks(topic_sinks)))

    def put_extents(self, extents):
        """Reports the source's acked extents; the pod keeps, per partition,
        the widest reported (in memory) for gaps, plan, the map and metrics.
        Answers a summary {"extents": kept, "changed": widened or added}."""
        return self._request("PUT", "/v1/extents", json.dumps(list(extents)).encode())

    def committed(self, sink=None, topic=None, partition=None):
        """The durable tier's committed coverage: rows {sink, topic, partition, start, end}."""
        q = {k: v for k, v in (("sink", sink), ("topic", topic), ("partition", partition)) if v is not None}
        return self._request("GET", "/v1/committed" + ("?" + urllib.parse.urlencode(q) if q else ""))

    def coverage(self):
        return self._request("GET", "/v1/coverage")

    def _source_path(self, source):
        # quote leaves "." and ".." as they are, and a server would clean
        # them out of the path: %2E keeps them one segment, the source's name.
        if source in (".", ".."):
            return "/v1/positions/" + "%2E" * len(source)
        return "/v1/positions/" + urllib.parse.quote(source, safe="")

    def put_position(self, source, partition, cursor, raw_end):
        """Saves a stored source's position (durable after the next checkpoint).

        raw_end: the end (exclusive) of the raw batches the cursor covers;
        call it only once raw durably holds them."""
        _check_text("cursor", cursor)
        body = json.dumps({"partition": partition, "cursor": cursor, "raw_end": raw_end}).encode()
        return self._request("PUT", self._source_path(source), body)

    def get_position(self, source, partition):
        """The position to resume from: never past a gap in raw's committed coverage."""
        return self._request("GET", "%s?partition=%d" % (self._source_path(source), partition))


def _selftest_edge(c, topic):
    """The recovery loop over a stream whose first stretch was lost on every
    tier: only [10,20) was recorded for raw and the lake."""
    for sink in ("raw", "lake"):
        c.record([{"sink": sink, "topic": topic, "partition": 0, "start": 10, "end": 20}])
    c.checkpoint()
    assert c.gaps(topic=topic) == [], "no hole shows without the extent"
    acked = [{"topic": topic, "partition": 0, "end": 20}]
    kinds = []
    for _ in range(5):
        tasks = [t for t in c.plan(extents=acked) if t["topic"] == topic]
        if not tasks:
            break
        for t in tasks:
            kinds.append(t["kind"])
            start, end = t["start"], t["end"]
            if t["kind"] == "verify-reference":
                # A verifier reads raw back and records only what raw holds
                # of the range: here [0,20), what the source acked.
                start, end = max(start, 0), min(end, 20)
            # A replay is recorded after the sink's ack.
            if start < end:
                c.record([{"sink": t["sink"], "topic": t["topic"], "partition": t["partition"], "start": start, "end": end}])
        c.checkpoint()
    assert kinds == ["verify-reference", "replay"], kinds
    assert c.committed(sink="lake", topic=topic) == [{"sink": "lake", "topic": topic, "partition": 0, "start": 0, "end": 20}]


def _selftest(argv):
    """Exercises every call against a running serve with --source files=stored
    --source kafka=broker-managed: python3 covmirror_client.py URL SOCKET
    [TOKEN_FILE]."""
    url, sock = argv[1], argv[2]
    token_file = argv[3] if len(argv) > 3 else None
    if token_file:
        try:
            Client(url).gaps()
            raise AssertionError("a request without the token was answered")
        except CovmirrorError as e:
            assert e.status == 401 and e.rule == "token", e
    for c in (Client(url, token_file=token_file), Client(socket=sock)):
        assert c.record([]) == 0
        batch = [{"sink": "raw", "topic": "files", "partition": 0, "start": i * 10, "end": i * 10 + 10} for i in range(100)]
        assert c.record(batch) == 100
        assert c.record_ndjson([{"sink": "lake", "topic": "files", "partition": 0, "start": 0, "end": 500}]) == 1
        bad = batch[:5] + [{"sink": "raw", "topic": "files", "partition": -1, "start": 0, "end": 1}]
        try:
            c.record(bad)
            raise AssertionError("a negative partition was accepted")
        except CovmirrorError as e:
            assert e.status == 400 and e.entry == 5 and e.rule == "partition", e
        c.put_position("files", 0, "file-0999", raw_end=1000)
        cp = c.checkpoint()
        assert cp["positions"] in (0, 1), cp
        gaps = c.gaps(sink="lake")
        assert gaps == [{"sink": "lake", "topic": "files", "partition": 0, "start": 500, "end": 1000, "kind": "replay"}], gaps
        _selftest_edge(c, "edge-%d" % id(c))
        pos = c.get_position("files", 0)
        assert pos["found"] and pos["cursor"] == "file-0999" and pos["raw_end"] == 1000, pos
        try:
            c.put_position("kafka", 0, "x", 1)
            raise AssertionError("a broker-managed source was accepted")
        except CovmirrorError as e:
            assert e.status == 409 and e.rule == "broker-managed", e
        assert "destinations" in c.coverage()
        # "." and ".." reach the server as one segment (never cleaned into
        # another route and redirected), and any answer not 2xx raises.
        for name in (".", ".."):
            try:
                c.get_position(name, 0)
                raise AssertionError("source %r answered as success" % name)
            except CovmirrorError as e:
                assert e.status == 404 and e.rule == "unknown-source", e
        try:
            c._request("GET", "/v1/positions/..?partition=0")
            raise AssertionError("a redirect answered as success")
        except CovmirrorError as e:
            assert 300 <= e.status < 400, e
        c.close()
    print("ok")


if __name__ == "__main__":
    _selftest(sys.argv)

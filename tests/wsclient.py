"""A small WebSocket client (RFC 6455) in the standard library, for the tests and the conform adapter example.

    with wsclient.connect("ws://127.0.0.1:8000/fixture/v1/responses") as ws:
        ws.send_text(json.dumps({"type": "response.create", ...}))
        message = ws.receive()          # (opcode, payload bytes) of one whole message; None once closed
        ws.close_code                   # the server's close code, once its close frame came

It masks every frame it sends (a client must), reassembles fragmented messages, answers pings, and can
also send what a broken client sends (`send_frame` with mask=False, reserved bits, any opcode or
length) so the tests can check the server's refusals.  ws:// only (the server under test is loopback).
"""

import base64
import hashlib
import os
import socket
from urllib.parse import urlsplit

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MOST = 64 << 20   # bytes of one message this client takes from a server


class HandshakeRefused(Exception):
    """The server answered the upgrade with another status: status, headers (lower-case names), body."""

    def __init__(self, status, headers, body):
        super().__init__(f"the upgrade was answered {status}")
        self.status, self.headers, self.body = status, headers, body


def _mask(key, payload):
    size = len(payload)
    stream = (key * (size // 4 + 1))[:size]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(stream, "little")).to_bytes(size, "little")


def frame(opcode, payload=b"", fin=True, mask=True, rsv=0, length=None):
    """The bytes of one client frame (length: the length field to claim, whatever the payload is)."""
    size = len(payload) if length is None else length
    first = (0x80 if fin else 0) | rsv << 4 | opcode
    if size < 126:
        head = bytes((first, (0x80 if mask else 0) | size))
    elif size < 1 << 16:
        head = bytes((first, (0x80 if mask else 0) | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((first, (0x80 if mask else 0) | 127)) + size.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + _mask(key, payload)


class WebSocket:
    """One client connection; see the module's docstring."""

    def __init__(self, url, timeout=10.0, headers=None, version="13", key=None, upgrade="websocket"):
        parts = urlsplit(url)
        if parts.scheme != "ws":
            raise ValueError(f"{url}: only ws:// URLs")
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        self.buffer = b""
        self.close_code = None     # the server's close code (None: no close frame came, or one without a code)
        self.close_reason = ""
        self.closed = False        # its close frame came
        self.ended = False         # the connection ended (with or without a close frame)
        self.pongs = []
        key = key if key is not None else base64.b64encode(os.urandom(16)).decode("ascii")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"GET {path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: Upgrade"]
        if upgrade:
            lines.append(f"Upgrade: {upgrade}")
        if version is not None:
            lines.append(f"Sec-WebSocket-Version: {version}")
        if key:
            lines.append(f"Sec-WebSocket-Key: {key}")
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, self.headers, body = self._response_head()
        if status != 101:
            self.sock.close()
            raise HandshakeRefused(status, self.headers, body)
        want = base64.b64encode(hashlib.sha1(key.encode("ascii") + GUID).digest()).decode("ascii")
        if self.headers.get("sec-websocket-accept") != want:
            self.sock.close()
            raise ConnectionError("the server's Sec-WebSocket-Accept does not match the key")

    def _response_head(self):
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection before its answer's head")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        if status != 101:
            length = int(headers.get("content-length", "0"))
            while len(self.buffer) < length:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                self.buffer += chunk
            body = self.buffer[:length]
        return status, headers, body

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send_frame(self, opcode, payload=b"", **options):
        self.sock.sendall(frame(opcode, payload, **options))

    def send_text(self, text):
        self.send_frame(TEXT, text.encode("utf-8") if isinstance(text, str) else text)

    def _read(self, size):
        while len(self.buffer) < size:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _frame(self):
        head = self._read(2)
        fin, opcode, size = bool(head[0] & 0x80), head[0] & 0x0F, head[1] & 0x7F
        if head[1] & 0x80:
            raise ConnectionError("a server's frame must not be masked")
        if size >= 126:
            size = int.from_bytes(self._read(2 if size == 126 else 8), "big")
        if size > MOST:
            raise ConnectionError(f"a frame of {size} bytes")
        return fin, opcode, self._read(size)

    def receive(self):
        """(opcode, payload) of the next whole data message; None once the connection ended (close_code
        then holds the server's code, if a close frame came).  Pings are answered."""
        parts, first = [], None
        while True:
            try:
                fin, opcode, payload = self._frame()
            except (EOFError, ConnectionResetError):
                self.ended = True
                return None
            if opcode == PING:
                self.send_frame(PONG, payload)
                continue
            if opcode == PONG:
                self.pongs.append(payload)
                continue
            if opcode == CLOSE:
                self.closed = True
                if len(payload) >= 2:
                    self.close_code = int.from_bytes(payload[:2], "big")
                    self.close_reason = payload[2:].decode("utf-8", "replace")
                return None
            first = opcode if first is None else first
            parts.append(payload)
            if fin:
                return first, b"".join(parts)

    def texts(self, until=None):
        """The text messages received until the connection ends, or until one for which until(text) is true."""
        found = []
        while True:
            message = self.receive()
            if message is None:
                return found
            found.append(message[1].decode("utf-8"))
            if until is not None and until(found[-1]):
                return found

    def close(self, code=1000, reason=""):
        """Send a close frame, then read until the server's close frame (or the end)."""
        payload = b"" if code is None else code.to_bytes(2, "big") + reason.encode("utf-8")
        try:
            self.send_frame(CLOSE, payload)
            while self.receive() is not None:
                pass
        except OSError:
            pass
        self.sock.close()


def connect(url, **options):
    return WebSocket(url, **options)

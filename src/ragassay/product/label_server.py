"""The local web page of ``ragassay label``: the standard library's HTTP server on 127.0.0.1, one
random token in the URL that every request must carry, one page and four JSON routes, nothing else
served. All text from the data reaches the page as JSON and is put on screen as text, never as
markup, under a Content-Security-Policy that runs only the page's own script."""

from __future__ import annotations

import json
import secrets
import sys
import threading
import webbrowser
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

from ..errors import RagassayError
from .label_page import page
from .labeling import LabelBook

MAX_BODY = 64 * 1024


class LabelServer:
    """Serve ``book`` at ``http://127.0.0.1:PORT/?token=...`` (``port`` 0: any free port)."""

    def __init__(self, book: LabelBook, *, host: str = "127.0.0.1", port: int = 0, show_model: bool = False):
        self.book = book
        self.show_model = show_model
        self.token = secrets.token_urlsafe(24)
        self.nonce = secrets.token_urlsafe(16)
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # the terminal shows the URL and the summary only
                pass

            def do_GET(self) -> None:
                server._handle(self, "GET")

            def do_POST(self) -> None:
                server._handle(self, "POST")

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        bound, self.port = self.httpd.server_address[:2]
        # bytes: a Unix socket only
        self.host = bytes(bound).decode() if isinstance(bound, (bytes, bytearray)) else bound
        self.url = f"http://{self.host}:{self.port}/?token={self.token}"

    def serve_forever(self) -> None:
        self._serving = True
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self._serving = False

    def shutdown(self) -> None:
        """Stop serving and close the socket. ``httpd.shutdown`` waits for a serving loop to end, so
        it is only called while one runs (in another thread): a Ctrl-C that came before the loop
        started must not hang here."""
        if getattr(self, "_serving", False):
            self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------------------ requests

    def _handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(req.path)
        host = (req.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        if host not in ("127.0.0.1", "localhost", "::1", self.host):  # a rebound DNS name is not us
            return self._send(req, 403, {"error": "forbidden host"})
        token = req.headers.get("X-Token") or parse_qs(parts.query).get("token", [""])[0]
        if not secrets.compare_digest(token, self.token):
            return self._send(req, 403, {"error": "this page needs the URL ragassay label printed (with its token)"})
        try:
            if method == "GET" and parts.path == "/":
                return self._send_page(req)
            if method == "GET" and parts.path == "/api/state":
                with self.lock:
                    return self._send(req, 200, self.state())
            if method == "POST" and parts.path in ("/api/label", "/api/skip", "/api/undo"):
                body = self._body(req)
                with self.lock:
                    return self._send(req, 200, self._act(parts.path.rsplit("/", 1)[1], body))
        except (RagassayError, ValueError, KeyError, TypeError) as e:
            return self._send(req, 400, {"error": str(e)})
        self._send(req, 404, {"error": "not found"})

    def _body(self, req: BaseHTTPRequestHandler) -> dict[str, Any]:
        length = int(req.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("request too large")
        data = json.loads(req.rfile.read(length) or b"{}")
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        return data

    def _act(self, act: str, body: dict[str, Any]) -> dict[str, Any]:
        change: dict[str, Any] = {}
        if act == "label":
            change = self.book.label(str(body["key"]), body["value"], float(body.get("seconds") or 0.0))
        elif act == "skip":
            self.book.skip(str(body["key"]), str(body.get("reason") or ""))
        else:
            change = {"undone": self.book.undo()}
        return {**self.state(), "done": change}

    def state(self) -> dict[str, Any]:
        """What the page shows. Blind by default: the model's grade of an item is sent only once the
        person has labelled it (or with --show-model)."""
        b = self.book
        items = []
        for it in b.items:
            visible = self.show_model or it.key in b.labels
            items.append(
                {
                    "key": it.key,
                    "show": it.show,
                    "model": it.model if visible else None,
                    "has_model": it.model is not None,
                }
            )
        return {
            "task": b.task,
            "assessor": b.assessor,
            "show_model": self.show_model,
            "scale": [{"value": v, "key": k, "meaning": m} for v, k, m in b.scale],
            "items": items,
            "labels": b.labels,
            "skipped": b.skipped,
            "progress": b.progress(),
            "agreement": b.agreement_with_model(),
            "people": b.agreement_with_others(),
            "target_width": b.target_width,
            "output": str(b.output),
        }

    def _send_page(self, req: BaseHTTPRequestHandler) -> None:
        data = page(self.token, self.nonce).encode("utf-8")
        req.send_response(200)
        req.send_header("Content-Type", "text/html; charset=utf-8")
        req.send_header(
            "Content-Security-Policy",
            f"default-src 'none'; script-src 'nonce-{self.nonce}'; style-src 'nonce-{self.nonce}'; "
            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'",
        )
        self._common_headers(req, len(data))
        req.wfile.write(data)

    def _send(self, req: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
        data = json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")
        req.send_response(status)
        req.send_header("Content-Type", "application/json; charset=utf-8")
        self._common_headers(req, len(data))
        req.wfile.write(data)

    @staticmethod
    def _common_headers(req: BaseHTTPRequestHandler, length: int) -> None:
        req.send_header("Content-Length", str(length))
        req.send_header("Cache-Control", "no-store")
        req.send_header("X-Content-Type-Options", "nosniff")
        req.send_header("Referrer-Policy", "no-referrer")
        req.end_headers()


# how a session that was stopped ends, as every command ends when stopped (README: exit codes)
STOPPED = {130: "interrupted", 143: "terminated (SIGTERM)"}


@dataclass
class SessionEnd:
    """How a labelling session ended: its ``calibration`` result (the labels so far, all on disk)
    and the exit code it ends with: 130 stopped by Ctrl-C, 143 by SIGTERM (0 only when serving
    ended some other way)."""

    result: dict[str, Any]
    exit_code: int = 0


def label_session(
    book: LabelBook, *, port: int = 0, show_model: bool = False, open_browser: bool = True, say: TextIO | None = None
) -> SessionEnd:
    """Serve ``book`` until Ctrl-C (or SIGTERM) and return its ``calibration`` result with the exit
    code of a stopped command. From the first line printed (to ``say``, the URL among them) a stop
    at any moment is the ordinary way to end: every label is on disk already, a label being written
    is finished first, and the server and the book are always closed.

    SIGTERM reaches here as the KeyboardInterrupt that ``ragassay.cli`` raises for it, which carries
    ``exit_code`` 143; a plain KeyboardInterrupt is Ctrl-C."""
    say = say or sys.stdout
    server = LabelServer(book, port=port, show_model=show_model)
    code = 0
    try:
        print(
            f"labelling {len(book.items)} {'pairs' if book.task == 'pairs' else 'answers'} as {book.assessor}; "
            f"labels go to {book.output} the moment they are given. Open:",
            file=say,
            flush=True,
        )
        print(server.url, file=say, flush=True)
        print("(Ctrl-C stops; rerun the same command to go on)", file=sys.stderr, flush=True)
        if open_browser:
            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt as stop:
        code = getattr(stop, "exit_code", 130)
    finally:
        server.shutdown()
        with server.lock:  # a label a request is writing now is written whole before the book closes
            book.close()
    if code:
        print(
            f"{STOPPED.get(code, 'stopped')}; every label given is saved: a rerun of the same command resumes "
            "where this one stopped",
            file=sys.stderr,
            flush=True,
        )
    return SessionEnd(book.calibration(), code)

"""An SQLite cache of answers: a rerun costs nothing.

Keyed by a hash of where the answer came from (the endpoint's normalised base URL, the model) and
what was asked (messages, response schema, sampling parameters): two local servers that both call
their model "local" never share answers. Stores the parsed answer, the raw text and the token
usage. WAL mode and a busy timeout make it safe for several processes writing at once. Nothing
secret is stored: no key, no headers, and the base URL only inside the hash.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..data.sqlite_files import open_own_database
from ..errors import InputError
from .speed import Speed

if TYPE_CHECKING:
    from .speed import Speed

MIGRATIONS = [
    """CREATE TABLE answers (
        key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        answer TEXT NOT NULL,
        raw TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        created REAL NOT NULL
    )""",
    # what a dry run calibrates its estimates from: the request's size in characters, the answer's
    # schema, and the endpoint (the same model name on two servers may count tokens apart)
    "ALTER TABLE answers ADD COLUMN endpoint TEXT",
    "ALTER TABLE answers ADD COLUMN schema TEXT",
    "ALTER TABLE answers ADD COLUMN prompt_chars INTEGER",
    # the structured-output mode an endpoint and model were found to take, and why (llm/client.py)
    """CREATE TABLE modes (
        endpoint TEXT NOT NULL,
        model TEXT NOT NULL,
        mode TEXT NOT NULL,
        reason TEXT,
        created REAL NOT NULL,
        PRIMARY KEY (endpoint, model)
    )""",
    # how fast an endpoint's model reads a prompt and writes an answer, one call at a time, as `ping`
    # measured it (llm/speed.py): a dry run turns tokens into time from it
    """CREATE TABLE speeds (
        endpoint TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_per_second REAL NOT NULL,
        answer_per_second REAL NOT NULL,
        seconds_per_call REAL NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (endpoint, model)
    )""",
]


@lru_cache(maxsize=64)
def endpoint_id(base_url: str | None) -> str:
    """A base URL as the cache knows it: scheme and host in lower case, no credentials, no default
    port, no trailing slash; the OpenAI API when none is set (the openai client's default)."""
    url = urlsplit((base_url or "https://api.openai.com/v1").strip())
    scheme = url.scheme.lower()
    host = (url.hostname or "").lower()
    port = url.port if url.port is not None and (scheme, url.port) not in (("http", 80), ("https", 443)) else None
    return f"{scheme}://{host}{f':{port}' if port else ''}{url.path.rstrip('/')}"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(
    model: str,
    messages: list[dict],
    schema: dict | None,
    params: dict,
    endpoint: str = "",
    schema_json: str | None = None,
) -> str:
    """sha256 of ``{"endpoint", "messages", "model", "params", "schema"}`` as canonical JSON (keys
    sorted, no spaces). Written out part by part in that order, which is what serialising the whole
    object gives, so that the schema (the same for every call of a stage) can come pre-serialised as
    ``schema_json``; tests hold the two spellings equal."""
    schema_text = schema_json if schema_json is not None else _canonical(schema)
    payload = (
        f'{{"endpoint":{_canonical(endpoint)},"messages":{_canonical(messages)},"model":{_canonical(model)},'
        f'"params":{_canonical(params)},"schema":{schema_text}}}'
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Cache:
    @classmethod
    def read_only(cls, path: str | Path | None) -> Cache | None:
        """The cache for looking answers up without writing (dry runs); None when there is none yet."""
        if path is None or not Path(path).is_file():
            return None
        self = cls.__new__(cls)
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
            self.db.execute("SELECT 1 FROM answers LIMIT 1")
        except sqlite3.Error:
            return None
        return self

    def __init__(self, path: str | Path):
        self.path = Path(path)
        # one thread at a time uses it, but not always the one that opened it (a notebook runs stages
        # in a worker thread: see api.in_own_thread); a broken, foreign or read-only file is one clear line
        self.db = open_own_database(self.path, {"answers", "modes", "speeds"}, "answer cache", "--cache")
        try:
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.Error as e:
            raise InputError(
                f"--cache: the answer cache cannot be used ({e}); give another path or --no-cache", self.path
            ) from None

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        for i, sql in enumerate(MIGRATIONS[version:], start=version + 1):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if self.db.execute("PRAGMA user_version").fetchone()[0] < i:  # another process may have
                    self.db.execute(sql)
                    self.db.execute(f"PRAGMA user_version = {i}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT answer, raw, prompt_tokens, completion_tokens FROM answers WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return {"answer": json.loads(row[0]), "raw": row[1], "prompt_tokens": row[2], "completion_tokens": row[3]}

    def get_mode(self, endpoint: str, model: str) -> tuple[str, str] | None:
        """(mode, why) an earlier run found ``model`` at ``endpoint`` to take; None when none did."""
        try:
            row = self.db.execute(
                "SELECT mode, reason FROM modes WHERE endpoint = ? AND model = ?", (endpoint, model)
            ).fetchone()
        except sqlite3.Error:  # a read-only cache of an older version: no memory, not a failure
            return None
        return (row[0], row[1] or "") if row else None

    def put_mode(self, endpoint: str, model: str, mode: str, reason: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO modes (endpoint, model, mode, reason, created) VALUES (?, ?, ?, ?, ?)",
            (endpoint, model, mode, reason, time.time()),
        )
        self.db.commit()

    def get_speed(self, endpoint: str, model: str) -> Speed | None:
        """What ``ping`` last measured of ``model`` at ``endpoint``; None when it never did."""
        try:
            row = self.db.execute(
                "SELECT prompt_per_second, answer_per_second, seconds_per_call, created FROM speeds "
                "WHERE endpoint = ? AND model = ?",
                (endpoint, model),
            ).fetchone()
        except sqlite3.Error:  # a read-only cache of an older version: nothing measured
            return None
        return Speed(*row) if row else None

    def put_speed(self, endpoint: str, model: str, speed: Speed) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO speeds (endpoint, model, prompt_per_second, answer_per_second, "
            "seconds_per_call, created) VALUES (?, ?, ?, ?, ?, ?)",
            (endpoint, model, speed.prompt_per_second, speed.answer_per_second, speed.seconds_per_call, speed.measured),
        )
        self.db.commit()

    def holds_model(self, model: str) -> bool:
        """Whether any answer of ``model`` is stored: when none is, no request of it can be answered
        from here, and a dry run need not compute its requests' keys to know it."""
        return self.db.execute("SELECT 1 FROM answers WHERE model = ? LIMIT 1", (model,)).fetchone() is not None

    def put(
        self,
        key: str,
        model: str | None,
        answer: dict,
        raw: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        endpoint: str | None = None,
        schema: str | None = None,
        prompt_chars: int | None = None,
    ) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO answers (key, model, answer, raw, prompt_tokens, completion_tokens, created,"
            " endpoint, schema, prompt_chars) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                model,
                json.dumps(answer, ensure_ascii=False),
                raw,
                prompt_tokens,
                completion_tokens,
                time.time(),
                endpoint,
                schema,
                prompt_chars,
            ),
        )

    def calibration(self, model: str, endpoint: str) -> tuple[int, int, int, dict[str, tuple[float, int]]]:
        """What this endpoint's model really counted, for estimates: (answers, prompt tokens, prompt
        characters, {schema: (mean completion tokens, answers)}). Answers of the same model from any
        endpoint stand in when this one has none. A cache written before these were kept, opened
        read-only (so not migrated), has nothing to tell."""
        try:
            return self._calibration(model, endpoint)
        except sqlite3.OperationalError:  # no such column
            return 0, 0, 0, {}

    def _calibration(self, model: str, endpoint: str) -> tuple[int, int, int, dict[str, tuple[float, int]]]:
        for where, args in (("model = ? AND endpoint = ?", (model, endpoint)), ("model = ?", (model,))):
            n, tokens, chars = self.db.execute(
                f"SELECT COUNT(*), SUM(prompt_tokens), SUM(prompt_chars) FROM answers WHERE {where} "
                "AND prompt_chars > 0 AND prompt_tokens > 0",
                args,
            ).fetchone()
            if n:
                out = {
                    row[0]: (float(row[1]), int(row[2]))
                    for row in self.db.execute(
                        f"SELECT schema, AVG(completion_tokens), COUNT(*) FROM answers WHERE {where} "
                        "AND schema IS NOT NULL AND completion_tokens > 0 GROUP BY schema",
                        args,
                    )
                }
                return int(n), int(tokens), int(chars), out
        return 0, 0, 0, {}

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self.db.close()

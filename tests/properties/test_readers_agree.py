"""Both readers of plain column files give the same table or the same error: pyarrow's parser, which
streams a file from its path, and the numpy splitter, which reads the whole file. Adversarial
contents for qrels and runs: comments, blank lines, a header, CRLF and lone carriage returns (near
the start, and far past the first 64 KB the streaming reader looks at), duplicates, grades written
as floats or with signs, tabs, non-UTF-8 ids."""

from __future__ import annotations

import pytest

from ragassay.data.qrels_files import read_qrels
from ragassay.data.run_files import read_run
from ragassay.errors import InputError

FILLER_QRELS = "".join(f"q{i % 97} 0 doc{i} {i % 4}\n" for i in range(6000))  # ~100 KB of clean lines
FILLER_RUN = "".join(f"q{i % 97} Q0 doc{i} {i} {1000 - i * 0.01:.2f} tag\n" for i in range(4000))

QRELS_CASES = {
    "clean": FILLER_QRELS,
    "crlf": FILLER_QRELS.replace("\n", "\r\n"),
    "lone CR near the start": "q1 0 a 1\rq2 0 b 1\n" + FILLER_QRELS,
    "lone CR far in": FILLER_QRELS + "q1 0 late 1\rq2 0 later 1\n",
    "lone CR at the very end": FILLER_QRELS + "q1 0 last 1\r",
    "comment far in": FILLER_QRELS + "# a comment\nq1 0 x9 2\n",
    "blank lines far in": FILLER_QRELS + "\n\nq1 0 x9 2\n",
    "duplicate far in": FILLER_QRELS + "q0 0 doc0 3\n",
    "grade as a float": FILLER_QRELS + "q1 0 y 2.0\n",
    "grade with a sign": FILLER_QRELS + "q1 0 y +2\n",
    "grade 1e2": FILLER_QRELS + "q1 0 y 1e2\n",
    "grade too big": FILLER_QRELS + "q1 0 y 99999999999\n",
    "grade in hex first": "q1 0 y 0x10\n" + FILLER_QRELS,
    "grade in hex far in": FILLER_QRELS + "q1 0 y 0X1f\n",
    "grade with leading zeros": FILLER_QRELS + "q1 0 y 0003\n",
    "grade minus zero": FILLER_QRELS + "q1 0 y -0\n",
    "grade with a minus inside": FILLER_QRELS + "q1 0 y 1-2\n",
    "an empty grade then a two-digit one": FILLER_QRELS + "q1 0 y \nq1 0 z 12\n",
    "two-digit grades among one-digit ones": FILLER_QRELS + "q1 0 y 12\nq1 0 z 3\n",
    "non-UTF-8 in the ignored column": FILLER_QRELS + "q1 \udcff y 2\n",
    "tabs": FILLER_QRELS.replace(" ", "\t"),
    "three columns": "".join(f"q{i % 7}\td{i}\t{i % 3}\n" for i in range(5000)),
    "beir with header": "query-id\tcorpus-id\tscore\n" + "".join(f"q{i % 7}\td{i}\t{i % 3}\n" for i in range(5000)),
}

RUN_CASES = {
    "clean": FILLER_RUN,
    "crlf": FILLER_RUN.replace("\n", "\r\n"),
    "lone CR far in": FILLER_RUN + "q1 Q0 late 1 0.5 t\rq2 Q0 later 1 0.5 t\n",
    "duplicate far in": FILLER_RUN + "q0 Q0 doc0 1 0.1 tag\n",
    "comment far in": FILLER_RUN + "# a comment\nq1 Q0 x9 1 0.5 t\n",
    "score nan": FILLER_RUN + "q1 Q0 x9 1 nan t\n",
    "score with a comma": FILLER_RUN + "q1 Q0 x9 1 0,5 t\n",
    "non-UTF-8 in the tag": FILLER_RUN + "q1 Q0 x9 1 0.5 sys\udce9\n",
    "score in hex": FILLER_RUN + "q1 Q0 x9 1 0x1p3 t\n",
    "score with a plus and no leading digit": FILLER_RUN + "q1 Q0 x9 1 +.5 t\n",
    "score 1e400": FILLER_RUN + "q1 Q0 x9 1 1e400 t\n",
}


def read(kind: str, path, parser: str, monkeypatch):
    monkeypatch.setenv("RAGASSAY_PARSER", parser)
    try:
        table = read_qrels(path) if kind == "qrels" else read_run(path)
    except InputError as e:
        return ("error", e.message, e.line)
    values = table.grades if kind == "qrels" else table.scores
    return (
        "table",
        table.queries,
        table.qidx.tolist(),
        table.doc_ids.tolist(),
        values.tolist(),
        table.digest() if kind == "qrels" else None,
    )


@pytest.mark.parametrize("kind, name", [("qrels", n) for n in QRELS_CASES] + [("run", n) for n in RUN_CASES])
def test_both_readers_give_the_same_table_or_the_same_error(tmp_path, monkeypatch, kind, name):
    pytest.importorskip("pyarrow")
    text = (QRELS_CASES if kind == "qrels" else RUN_CASES)[name]
    path = tmp_path / f"{kind}.txt"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))  # (\udcXX: the raw byte XX, not UTF-8)
    whole, streamed = read(kind, path, "numpy", monkeypatch), read(kind, path, "arrow", monkeypatch)
    assert streamed == whole
    if "lone CR" in name:  # refused, naming the line, whichever reader
        assert whole[0] == "error" and "lone carriage return" in whole[1] and whole[2] is not None


def test_a_non_utf8_id_far_in_is_refused_by_both(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    path = tmp_path / "q.txt"
    path.write_bytes(FILLER_QRELS.encode() + b"q1 0 \xff\xfe 1\n")
    assert read("qrels", path, "arrow", monkeypatch) == read("qrels", path, "numpy", monkeypatch)
    assert read("qrels", path, "numpy", monkeypatch)[0] == "error"


@pytest.mark.parametrize("ending, refused", [(b"\r\n", False), (b"\r", True)])
def test_a_line_end_across_the_scans_8_mb_boundary(tmp_path, monkeypatch, ending, refused):
    """The streaming reader looks for lone carriage returns 8 MB at a time: a CRLF split across two
    reads is a line end, a lone CR at the end of a read is refused, as the whole-file reader says."""
    pytest.importorskip("pyarrow")
    line = b"q1 0 d%07d 1\n"  # no CR in the first 64 KB: pyarrow takes the file, and the scan decides
    body = b"".join(line % i for i in range(((8 << 20) - 64) // len(line % 0)))
    head = body + b"q2 0 pad"
    fill = (8 << 20) - 1 - len(head) - len(b" 1")  # the CR of this line's end falls on the 8 MB's last byte
    path = tmp_path / "qrels.txt"
    path.write_bytes(head + b"x" * fill + b" 1" + ending + b"q3 0 last 2\r\n")
    assert path.read_bytes()[(8 << 20) - 1 : (8 << 20)] == b"\r"
    streamed, whole = read("qrels", path, "arrow", monkeypatch), read("qrels", path, "numpy", monkeypatch)
    assert streamed == whole and (whole[0] == "error") is refused

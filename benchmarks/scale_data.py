"""Large TREC runs and qrels for the scale benchmarks, generated with numpy (no Python loop per line)
and written once: a file already there with the same name is reused.

Each query ranks ``depth`` distinct documents by a score rounded to two decimals (so ties occur),
written query by query as retrieval systems write runs (``shuffled`` writes the lines in random
order instead); qrels judge ``judged`` documents per query, most of them retrieved, graded 0-3.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

QUERIES_PER_STEP = 10_000


def _lines(columns: list[np.ndarray]) -> memoryview:
    """Rows of byte-string columns joined by spaces (the last column ends each line with its
    newline), as the bytes of a file: pyarrow joins them and its data buffer is the text itself."""
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(*[pa.array(c, type=pa.binary()) for c in columns], b" ")
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    return memoryview(joined.buffers()[2])[: int(offsets[len(joined)])]


def _ids(prefix: bytes, values: np.ndarray) -> np.ndarray:
    return np.char.add(prefix, values.astype("S20"))


def write_pair(
    directory: Path, n_queries: int, depth: int, judged: int, seed: int = 0, shuffled: bool = False
) -> tuple[Path, Path]:
    """(qrels path, run path) of the named size under ``directory``; made unless already there."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"q{n_queries}_d{depth}_j{judged}_s{seed}" + ("_shuffled" if shuffled else "")
    qrels_path, run_path = directory / f"{stem}.qrels", directory / f"{stem}.run"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_queries) if shuffled else None
    tmp_q, tmp_r = qrels_path.with_suffix(".qrels.part"), run_path.with_suffix(".run.part")
    with open(tmp_q, "wb") as qf, open(tmp_r, "wb") as rf:
        for lo in range(0, n_queries, QUERIES_PER_STEP):
            hi = min(n_queries, lo + QUERIES_PER_STEP)
            nq = hi - lo
            pool = max(depth, judged) + judged // 4 + 4
            # distinct documents per query: a random offset per query plus a permutation of 0..pool-1
            perm = rng.permuted(np.tile(np.arange(pool, dtype=np.int64), (nq, 1)), axis=1)
            docs = rng.integers(0, 50_000_000, nq)[:, None] * 1000 + perm
            qids = np.arange(lo, hi) if order is None else order[lo:hi]
            scores = -np.sort(-np.round(rng.gamma(2.0, 3.0, (nq, depth)) + 5, 2), axis=1)
            q_run = np.repeat(_ids(b"q", qids), depth)
            ranks = np.tile(np.arange(1, depth + 1), nq).astype("S8")
            run_cols = [
                q_run,
                np.full(nq * depth, b"Q0"),
                _ids(b"d", docs[:, :depth].ravel()),
                ranks,
                scores.ravel().astype("S8"),
                np.full(nq * depth, b"bench\n"),
            ]
            # judged: mostly retrieved documents (the first ones of the permutation), some not retrieved
            retrieved = min(depth, judged - judged // 8)
            jdocs = (
                np.concatenate([docs[:, :retrieved], docs[:, pool - (judged - retrieved) :]], axis=1)
                if judged > retrieved
                else docs[:, :judged]
            )
            grades = np.array([b"0\n", b"1\n", b"2\n", b"3\n"])[
                rng.choice(4, size=jdocs.shape, p=[0.6, 0.2, 0.12, 0.08])
            ]
            q_qrels = np.repeat(_ids(b"q", qids), judged)
            qrels_cols = [q_qrels, np.full(nq * judged, b"0"), _ids(b"d", jdocs.ravel()), grades.ravel()]
            if shuffled:
                p = rng.permutation(nq * depth)
                run_cols = [c[p] for c in run_cols]
                p = rng.permutation(nq * judged)
                qrels_cols = [c[p] for c in qrels_cols]
            rf.write(_lines(run_cols))
            qf.write(_lines(qrels_cols))
    tmp_q.replace(qrels_path)
    tmp_r.replace(run_path)
    return qrels_path, run_path

"""Regenerate runs/bm25.txt and runs/tfidf.txt (top 10 per query) from the two retrievers.

pip install -e '.[example]'
python datasets/example/make_runs.py
"""

from pathlib import Path

import retrievers

from ragassay import read_queries, run_retriever, write_run

HERE = Path(__file__).parent

if __name__ == "__main__":
    queries = read_queries(HERE / "queries.jsonl")
    (HERE / "runs").mkdir(exist_ok=True)
    for name, fn in (("bm25", retrievers.bm25), ("tfidf", retrievers.tfidf)):
        run = run_retriever(fn, queries, k=10, name=name, progress=False)
        write_run(HERE / "runs" / f"{name}.txt", run)
        print(f"runs/{name}.txt: {len(run)} results for {len(queries)} queries")

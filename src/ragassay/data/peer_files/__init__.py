"""Files the neighbouring tools save, read where their content belongs.

* Samples, test cases and goldens (RAGAS 0.4 ``EvaluationDataset``/``Testset``: ``to_jsonl``,
  ``to_csv``, ``to_list`` dumped as a JSON array; DeepEval 4 ``EvaluationDataset.save_as`` json /
  jsonl / csv and ``model_dump(by_alias=True)`` lines; LlamaIndex ``LabelledRagDataset.save_json``,
  ``QueryResponseDataset.save_json`` and ``EmbeddingQAFinetuneDataset.save_json``): answers for
  ``check``, queries for ``--queries``.
* Qrels and runs (ranx 0.3 ``Qrels.save``/``Run.save`` as json or parquet, ``Qrels``/``Run``
  objects, DataFrames with ranx's or ir_measures' column names, ir_measures' ``Qrel``/``ScoredDoc``
  tuples, LlamaIndex's ``relevant_docs``): for evaluate, compare and the Python API.

**One id rule** for a row that carries no id of its own (the peers' samples have none): the row's
``id`` (or ``query_id``, ``qid``, ``_id``) when it has one; else the ``id`` inside its metadata
(DeepEval's ``additional_metadata``, a test case's ``metadata``: where ragassay's own DeepEval export
keeps each question's id, so a round trip keeps it); else ``line-N``, N the row's position in the
file counted from 1 (a JSONL file: its line number; a JSON array: its element number; a CSV file: its
row number after the header). ``check`` and every queries reader use this rule, so answers and
queries read from the same test set meet by id.

**Lists inside one text cell** are read the way the peer reads its own file back: DeepEval joins
``context`` and ``retrieval_context`` with ``|`` in its CSV and JSONL files and splits them on ``|``
when it loads them (so a passage holding ``|`` comes back as two, in DeepEval and here);
RAGAS writes a list into its CSV as Python's text of it (``['a', 'b']``), read here as that literal
(RAGAS has no CSV loader; a ``|`` inside such a list stays in its passage).

The readers live one per format in this package; the names below are re-exported for callers outside
``ragassay`` only (ragassay's own modules import each name from the module that defines it).
"""

from __future__ import annotations

from .binary_tables import LZ4_MAGIC, PARQUET_MAGIC, binary_table_columns, binary_table_kind
from .json_documents import json_document, whole_json
from .peer_queries import PeerQuery, is_ragassay_queries, llamaindex_corpus, peer_queries
from .python_objects import ranx_columns, tuple_columns
from .ranx_json import json_table_columns
from .sample_fields import (
    CAMEL_FIELDS,
    ID_FIELDS,
    METADATA_FIELDS,
    PEER_TO_OURS,
    QUESTION_FIELDS,
    PeerFields,
    PeerRow,
    answer_fields,
    row_id,
)
from .sample_files import answer_rows, sample_rows, single_turn
from .table_columns import TableColumns, named_columns, qrels_from_columns, run_from_columns

__all__ = [
    "CAMEL_FIELDS",
    "ID_FIELDS",
    "LZ4_MAGIC",
    "METADATA_FIELDS",
    "PARQUET_MAGIC",
    "PEER_TO_OURS",
    "QUESTION_FIELDS",
    "PeerFields",
    "PeerQuery",
    "PeerRow",
    "TableColumns",
    "answer_fields",
    "answer_rows",
    "binary_table_columns",
    "binary_table_kind",
    "is_ragassay_queries",
    "json_document",
    "json_table_columns",
    "llamaindex_corpus",
    "named_columns",
    "peer_queries",
    "qrels_from_columns",
    "ranx_columns",
    "row_id",
    "run_from_columns",
    "sample_rows",
    "single_turn",
    "tuple_columns",
    "whole_json",
]

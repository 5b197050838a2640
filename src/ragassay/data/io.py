"""Readers and writers for the data contract: TREC, JSON Lines and BEIR files, one module per format.

Every reader names the file and the line of the first problem it finds. Formats are detected from
the content (not the file name); pass ``format=`` to override the guess. The readers and writers
live in their own modules (``qrels_files``, ``run_files``, ``query_files``, ``chunk_files``,
``writers``, ``coerce``, with ``column_formats`` and ``column_reading`` beneath them); this module
only gathers their public names for callers outside ragassay, and ragassay's own modules import
each name from the module that defines it.
"""

from __future__ import annotations

from .beir_folders import BEIR_FILES, dataset_member
from .chunk_files import read_chunks
from .coerce import coerce_qrels, coerce_run, to_dataframe
from .column_formats import (
    BEIR_HEADER,
    HEADER_WORDS,
    ColumnShape,
    QrelsFormat,
    RunFormat,
    blank_comments,
    column_shape,
    detect_format,
    header_line,
)
from .column_reading import (
    ARROW_MIN_BYTES,
    GRADE_LIMIT,
    WholeReadScan,
    decode_query_ids,
    parse_grades,
    reader_path,
    whole_read_needed,
)
from .qrels_files import read_qrels
from .query_files import read_queries
from .record_validation import beir_id, read_records, validate_record, validation_message
from .run_files import read_run
from .writers import write_jsonl, write_qrels, write_run

__all__ = [
    "ARROW_MIN_BYTES",
    "BEIR_FILES",
    "BEIR_HEADER",
    "GRADE_LIMIT",
    "HEADER_WORDS",
    "ColumnShape",
    "QrelsFormat",
    "RunFormat",
    "WholeReadScan",
    "beir_id",
    "blank_comments",
    "coerce_qrels",
    "coerce_run",
    "column_shape",
    "dataset_member",
    "decode_query_ids",
    "detect_format",
    "header_line",
    "parse_grades",
    "read_chunks",
    "read_qrels",
    "read_queries",
    "read_records",
    "read_run",
    "reader_path",
    "to_dataframe",
    "validate_record",
    "validation_message",
    "whole_read_needed",
    "write_jsonl",
    "write_qrels",
    "write_run",
]

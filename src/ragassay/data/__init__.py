"""The data layer: the record contract (records), file readers and writers (io), the columnar
qrels and run tables (tables) and typed results (results). Imports nothing from llm/ or stages/."""

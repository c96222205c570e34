"""The readers and writers behind ``loopbreak scan``: one module per input format, each scanning
its file in batches with the batch API and, when asked, writing a cleaned copy in the same format.

- ``findings``: the findings of one batch of texts, with the units trimming would remove.
- ``field_path``: ``--field`` paths into JSON lines, such as ``messages.*.content``.
- ``inputs``: the files behind the command's paths, their formats and where cleaned copies go.
- ``readers``: the registry of formats: what each reads, the options it takes, its module.
- ``text_files``, ``json_lines``, ``parquet_files``, ``sqlite_tables``: one format each.
- ``report``: counts, per-finding lines and the summary table; ``progress``: the bar.
- ``atomic``: cleaned copies are written beside their destination, then renamed over it.
"""

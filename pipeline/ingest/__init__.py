"""Ingest: literature dump files in, per-file Parquet tables, quarantine and counts out; then
the merge into a build's tables.

* :mod:`.base` -- what every reader shares: the input file, the run and its Parquet sinks,
  the :class:`~.base.Reader` record by which a source declares a kind;
* :mod:`.records` -- the CSV record loop of the line-oriented readers and ``for_each_row``;
* :mod:`.semmeddb`, :mod:`.pubmed`, :mod:`.cord19`, :mod:`.citations` -- one module (or
  package) per source, each declaring its ``READERS``;
* :mod:`.registry` -- the declared readers collected, and ``KINDS`` derived from them;
* :mod:`.run` -- ``ingest_file``: one kind's reader over one file; ``ingest_files``: over
  several, keeping the folders already finished (``reuse``);
* :mod:`.merge` -- the per-file folders of a build merged into its tables;
* :mod:`.commands` -- ``ingest``, ``merge`` and ``synth``.
"""

"""The suites' full data sets, by id and pinned: manifests (``manifest``), fetching into the Hugging Face cache and
the thai-eval data home (``fetch``, ``locations``), checking (``catalogue.verify``, ``rows``) and reading a
``datasets`` pickle without running code (``pickles``). ``thai-eval data list|fetch|verify`` and ``thai-eval run
--data full`` are built on it; ``docs/data.md`` says where each suite's data comes from and why each pin.

Imports ``core`` only: a suite declares its manifest (``Suite.data_manifest``) and converters, and names nothing
here but the pickle reader.
"""

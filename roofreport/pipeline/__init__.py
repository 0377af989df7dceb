"""From paths to the shared tables: discover and sniff the files (`sniff.py`), parse each with
its family's reader, group files into runs (`runs.py`) and gather the tables (`ingest.py`)."""

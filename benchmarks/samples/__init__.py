"""The sample-log generator's pieces, one module per tool (driver: `benchmarks/make_sample_logs.py`)."""

"""The shared tables every family fills: their fixed schemas (`schema.py`), the frame helpers
that keep big tables cheap (`frames.py`), and writing them safely (`output.py`)."""

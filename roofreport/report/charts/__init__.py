"""The report's figures: matplotlib drawings (`roofline.py`, `share.py`, `utilization.py`) turned
into deterministic, escaped inline SVG (`svg.py`)."""

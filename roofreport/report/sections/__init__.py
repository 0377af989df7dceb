"""One module per section of the report: each turns the analyses into the `Report` context's
dataclasses (tables, charts, paragraphs); none computes a number of its own."""

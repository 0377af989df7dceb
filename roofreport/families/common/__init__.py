"""What every family's reader needs, written once: reading files as text (encodings, line ends,
bounded heads, pieces of big files), numbers and units as the profilers print them."""

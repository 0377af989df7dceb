"""Analyses: pure functions from the shared tables to answers (frames in, frames out)."""

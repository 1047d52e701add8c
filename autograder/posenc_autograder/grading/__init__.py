"""Grading: prepare (trusted), execute (sandboxed), judge (trusted)."""

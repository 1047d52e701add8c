"""Grading: prepare (trusted), execute (sandboxed), judge (trusted), and the class run of `make grade`."""

"""Authoring: the released notebooks, hidden-test cells and test plan written from the checks."""

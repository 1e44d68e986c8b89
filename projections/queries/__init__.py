"""Reads of the read models: current rows, as-of materializations, history, diffs, explanations.
They return plain values; rendering them as text is the CLI's."""

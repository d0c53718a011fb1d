"""Pure parsers: text -> typed records. No I/O; they never raise on odd input.

Each parser returns a ``Parsed`` record holding what it understood plus human-readable
warnings (with line numbers where that helps) for what it did not.
"""

"""Test support that ships with the package because real ranks must see it (see faults)."""

"""`collscope doctor` on this node or a bundle: capture, check, then the text report or the JSON
(JSON Lines records, or the deprecated single document); the exit code."""

from __future__ import annotations

import json
import socket
import sys
import time
from typing import Any

from collscope.config_flags import say_deprecated
from collscope.doctor.config import JSON_DOCUMENT


def run_node(config: Any) -> int:
    """This node (or a bundle): capture, check, print; the exit code. What libraries print to
    descriptor 1 meanwhile (gloo's connection lines in the self-test) goes to stderr, so
    stdout carries the report only (runtime.stdio)."""
    from collscope.runtime.stdio import libraries_to_stderr

    with libraries_to_stderr():
        return _capture_and_report(config)


def _capture_and_report(config: Any) -> int:
    from collscope.doctor import collect_local, diagnose, json_report, report
    from collscope.doctor.bundle import read_bundle, write_bundle
    from collscope.doctor.checks import exit_code

    start = time.monotonic()
    capture = read_bundle(config.source) if config.source else collect_local(config)
    facts, findings = diagnose(capture)
    notes = []
    if config.collect:
        count = write_bundle(capture, config.collect)
        notes.append(f"bundle: {count} files written to {config.collect}")
    elapsed = time.monotonic() - start
    if config.json_document:
        say_deprecated("--json without FILE", "--json FILE (JSON Lines; - for stdout)")
        sys.stdout.write(json.dumps(json_report(findings, facts), indent=1, default=str) + "\n")
    elif config.json:
        _write_json_lines(config, findings, facts)
    if config.json in ("-", JSON_DOCUMENT):     # stdout carries the JSON and nothing else
        for note in notes:
            sys.stderr.write(f"collscope doctor: {note}\n")
        return exit_code(findings)
    where = f"bundle {config.source}" if config.source else \
        f"host {facts.host.hostname or socket.gethostname()}"
    gpus = f"{len(facts.gpus)} {facts.vendor.upper()} GPU(s)" if facts.gpus else "no GPU"
    header = f"collscope doctor: {where}; {gpus}; {elapsed:.1f} s"
    footer = "\n".join(notes + ["explain a check: collscope doctor --explain ID"])
    report.render(findings, header, sys.stdout, footer)
    return exit_code(findings)


def _write_json_lines(config: Any, findings: list[Any], facts: Any) -> None:
    from collscope.doctor.cluster import node_summary
    from collscope.doctor.facts import inventory
    from collscope.doctor.json_lines import write_doctor_records
    from collscope.records.doctor import DoctorNodeRecord

    node = DoctorNodeRecord(node=0, host=facts.host.hostname or socket.gethostname(),
                            ranks=[0], summary=node_summary(facts), inventory=inventory(facts))
    write_doctor_records(config.json, findings, [node],
                         launcher="bundle" if config.source else "local",
                         from_bundle=bool(config.source))

"""A run's results as a JUnit XML file (``verify ... --junit FILE``) for CI systems.

One ``testcase`` per task (question x answering model x replicate). A failed task has a ``failure``
whose message names the failing traits and whose text gives each one's reason and quotes; an
incomplete task (something was not judged) is an ``error``, as a test that could not run; a task that
no rule decided (``judged``: scores only) is ``skipped``. The answer goes in ``system-out``. The layout
is the one Jenkins, GitLab and GitHub's test reporters read (the JUnit 10 schema of Surefire).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from verify.files import write_atomic
from verify.results.findings import answer_of, findings_of
from verify.results.models import VerificationResult
from verify.results.summary import Summary

__all__ = ["junit_xml", "write_junit"]


# XML 1.0 has no way to write these (a NUL in an answer would make the whole file unreadable)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _case_name(result: VerificationResult) -> str:
    meta = result.metadata
    return meta.question_id + (f" #{meta.replicate}" if meta.replicate is not None else "")


def _class_name(suite: str, result: VerificationResult) -> str:
    answering = result.metadata.answering
    return f"verify.{suite}.{answering.config_id or answering.model_name}"


def _testcase(parent: ET.Element, suite: str, result: VerificationResult) -> str:
    case = ET.SubElement(parent, "testcase", name=_case_name(result), classname=_class_name(suite, result),
                         time=f"{result.metadata.execution_time:.3f}")
    found = findings_of(result)
    if found.outcome == "failed":
        ET.SubElement(case, "failure", message=found.headline, type="failed").text = found.text()
    elif found.outcome == "incomplete":
        ET.SubElement(case, "error", message=found.headline, type="incomplete").text = found.text()
    elif found.outcome == "judged":
        ET.SubElement(case, "skipped", message="judged: scores only, no pass rule decided this task")
    ET.SubElement(case, "system-out").text = f"question: {result.metadata.question_text}\n\nanswer: {answer_of(result)}"
    return found.outcome


def junit_xml(results: Sequence[VerificationResult], summary: Summary, name: str) -> str:
    """The XML text: one ``testsuite`` named ``name``, its properties the run's coverage and pass rate."""
    root = ET.Element("testsuites", name="verify")
    suite = ET.SubElement(root, "testsuite", name=name)
    properties = ET.SubElement(suite, "properties")
    for key, value in (("coverage", f"{summary.coverage:.4f}"), ("pass_rate", summary.pass_rate_text()),
                       ("coverage_line", summary.coverage_line())):
        ET.SubElement(properties, "property", name=key, value=value)
    counts = {"failed": 0, "incomplete": 0, "judged": 0}
    for result in sorted(results, key=lambda r: (_class_name(name, r), r.metadata.question_id, r.metadata.replicate or 0)):
        outcome = _testcase(suite, name, result)  # in a stable order (tasks finish in any order)
        counts[outcome] = counts.get(outcome, 0) + 1
    total_time = sum(r.metadata.execution_time for r in results)
    attrs = {"tests": str(len(results)), "failures": str(counts["failed"]), "errors": str(counts["incomplete"]),
             "time": f"{total_time:.3f}"}
    root.attrib.update(attrs)
    suite.attrib.update({**attrs, "skipped": str(counts["judged"])})
    for element in root.iter():  # answers, reasons and ids are the run's data: any character may be in them
        element.text = _safe(element.text) if element.text else element.text
        element.attrib.update({k: _safe(v) for k, v in element.attrib.items()})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, results: Sequence[VerificationResult], summary: Summary, name: str) -> Path:
    write_atomic(path, junit_xml(results, summary, name))
    return path

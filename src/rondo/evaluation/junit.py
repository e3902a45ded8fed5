"""An eval report as JUnit XML: one `<testcase>` per eval case, for CI dashboards.

A failed case is a `<failure>` whose text explains each invocation that fell short (expected
and actual tool calls and text); a case whose run raised is an `<error>`. Each metric's score
is a `<property>` of its test case.
"""

from __future__ import annotations

from xml.etree import ElementTree

from rondo.evaluation.report import EvalReport

__all__ = ["junit_xml"]


def junit_xml(report: EvalReport) -> str:
    """The report as a JUnit XML document (`<testsuites>` with one `<testsuite>`)."""
    failures = sum(1 for c in report.cases if c.error is None and not c.passed)
    errors = sum(1 for c in report.cases if c.error is not None)
    suites = ElementTree.Element("testsuites")
    suite = ElementTree.SubElement(
        suites,
        "testsuite",
        name=report.eval_set_id,
        tests=str(len(report.cases)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
    )
    for case in report.cases:
        item = ElementTree.SubElement(
            suite, "testcase", name=case.eval_id, classname=f"rondo.eval.{report.eval_set_id}"
        )
        if case.metrics:
            properties = ElementTree.SubElement(item, "properties")
            for m in case.metrics:
                score = "n/a" if m.score is None else f"{m.score:.6g}"
                ElementTree.SubElement(
                    properties,
                    "property",
                    name=m.metric,
                    value=f"{score} (threshold {m.threshold:g}, {m.status})",
                )
        if case.error is not None:
            error = ElementTree.SubElement(item, "error", message=case.error)
            error.text = case.error
        elif not case.passed:
            explanation = "\n".join(case.explain()) or "no metric passed"
            failed = [m.metric for m in case.metrics if m.status == "failed"]
            message = f"failed: {', '.join(failed)}" if failed else "no metric passed"
            failure = ElementTree.SubElement(item, "failure", message=message)
            failure.text = explanation
    ElementTree.indent(suites)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"

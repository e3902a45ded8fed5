"""One OpenTelemetry SDK for the whole test process (the global providers can be set once).

`sdk()` installs an SDK `TracerProvider` with an in-memory span exporter and a
`MeterProvider` with an in-memory metric reader as the global providers, the first time it is
called, and returns them; tests clear the exporter and look only at their own spans. Skips
(fails with `RONDO_REQUIRE_OTEL_SDK=1`) when opentelemetry-sdk is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests._require import require_module

__all__ = ["Sdk", "sdk"]


@dataclass
class Sdk:
    provider: Any
    spans: Any  # InMemorySpanExporter
    metrics: Any  # InMemoryMetricReader

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def points(self, metric: str) -> list[Any]:
        """The data points of `metric` recorded so far (cumulative over the process)."""
        data = self.metrics.get_metrics_data()
        out: list[Any] = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name == metric:
                        out.extend(found.data.data_points)
        return out


_SDK: Sdk | None = None


def sdk() -> Sdk:
    global _SDK
    if _SDK is not None:
        return _SDK
    require_module("opentelemetry.sdk", what="OTEL_SDK", install="pip install 'rondo-agents[dev]'")
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    current = trace.get_tracer_provider()
    provider = current if isinstance(current, TracerProvider) else TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if provider is not current:
        trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    _SDK = Sdk(provider, exporter, reader)
    return _SDK

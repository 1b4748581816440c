"""The instruments every connection reports to: fault rules, metrics, and the protocol trace when one is
written (shared, set up by the server)."""

from __future__ import annotations

from dataclasses import dataclass

from broker.observability.faults import FaultInjector
from broker.observability.metrics import Metrics
from broker.observability.trace import Tracer


@dataclass(slots=True, eq=False)
class Instruments:
    """What the server measures and tests steer: fault rules, metrics and the protocol trace."""

    faults: FaultInjector
    metrics: Metrics
    tracer: Tracer | None = None  # --trace FILE

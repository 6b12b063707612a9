"""The SQLite store: the only package that speaks SQL.

One file per store. Tables: ``runs`` (with provenance), ``tasks`` (the suite's
tasks as a run saw them), ``trials`` (one row per attempt, unique per run,
task, trial, variant, agent and model), ``events`` (each trial's transcript),
``grades`` (versioned: re-grading adds a version beside the old),
``grade_versions`` (which one the run reports), ``grade_outcomes`` (each
trial's outcome per grade version), ``audit`` (every use of held-out tasks), ``documents`` (final
states and task specifications, each distinct one once, compressed) and
``meta`` (the schema version). docs/store.md describes the layout, how final
states are kept and how stores of earlier versions are upgraded.

Durability: ``synchronous=NORMAL`` in WAL mode survives a killed process (only
an OS crash or power loss can lose the last commits), which is what resume
needs; each harness trial is committed in its own transaction.
"""

from agentgauge.store.database import (
    DEFAULT_STORE,
    GradeVersion,
    MissingRun,
    StaleRecords,
    StaleRecordsWarning,
    Store,
    check_store_path,
)
from agentgauge.store.layout import SCHEMA_VERSION
from agentgauge.store.rows import utc_now
from agentgauge.store.writer import TrialWriter

__all__ = [
    "DEFAULT_STORE",
    "SCHEMA_VERSION",
    "GradeVersion",
    "MissingRun",
    "StaleRecords",
    "StaleRecordsWarning",
    "Store",
    "TrialWriter",
    "check_store_path",
    "utc_now",
]

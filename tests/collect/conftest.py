"""The receiver as a subprocess, for every test of this folder that takes ``collector``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.collect.test_receiver import Collector


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    """``agentgauge collect`` on a free port into ``live.db``, killed if a test left it."""
    c = Collector(tmp_path / "live.db")
    yield c
    c.kill()

"""The store conformance suite (`agent_core.testing.stores`) on every store Stepwise ships."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.testing.stores import (
    InMemoryHarness,
    PostgresHarness,
    SQLiteHarness,
    StoreConformance,
    StoreHarness,
)


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def store_harness(self, tmp_path: Path) -> Iterator[StoreHarness]:
        harness = SQLiteHarness(tmp_path / "x.db")
        yield harness
        harness.close()


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    def store_harness(self) -> Iterator[StoreHarness]:
        harness = InMemoryHarness()
        yield harness
        harness.close()


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store_harness(
        self,
        postgres_url: str,
        postgres_schema: str,
    ) -> Iterator[StoreHarness]:
        harness = PostgresHarness(postgres_url, postgres_schema)
        yield harness
        harness.close()

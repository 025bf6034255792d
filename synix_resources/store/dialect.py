"""The few SQL spellings that differ between the SQLite and PostgreSQL stores.

Everything else the store says is written once, in SQL both engines accept (`?` placeholders are
rewritten for PostgreSQL by `postgres.PgConnection`; text columns there use the "C" collation,
so ordering and prefix ranges compare bytes as SQLite does; `INSERT … ON CONFLICT … DO UPDATE SET
x = excluded.x` and recursive CTEs mean the same in both). Each difference is one attribute or
method here, so a query that needs one says so by name.
"""
from __future__ import annotations

POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def is_postgres_url(target: object) -> bool:
    """True when a store location is a PostgreSQL URL rather than a SQLite file path."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


class SQLiteDialect:
    name = "sqlite"
    # The implicit row id gives insertion order where timestamps tie.
    rowid = "rowid"

    @staticmethod
    def json_values(param: str = "?") -> str:
        """A table source with one TEXT column `value` per element of a JSON array parameter."""
        return f"json_each({param})"

    @staticmethod
    def json_text(column: str, key_param: str = "?") -> str:
        """The top-level `key` of a JSON text column, as text (key given as a parameter)."""
        return f"CAST(json_extract({column}, '$.' || json_quote({key_param})) AS TEXT)"

    @staticmethod
    def contains(column: str, param: str = "?") -> str:
        return f"instr({column}, {param}) > 0"


class PostgresDialect:
    name = "postgresql"
    # PostgreSQL has no implicit row id: insertion-ordered tables carry an identity column.
    rowid = "seq"

    @staticmethod
    def json_values(param: str = "?") -> str:
        return f"jsonb_array_elements_text(CAST({param} AS jsonb)) AS json_values(value)"

    @staticmethod
    def json_text(column: str, key_param: str = "?") -> str:
        # The stored JSON stays text (byte-for-byte what was written); cast only to read a key.
        return f"(CAST({column} AS jsonb) ->> CAST({key_param} AS text))"

    @staticmethod
    def contains(column: str, param: str = "?") -> str:
        return f"strpos({column}, {param}) > 0"


SQLITE = SQLiteDialect()
POSTGRES = PostgresDialect()


def ids_in(dialect, param: str = "?") -> str:
    """`(SELECT value FROM …)`: the elements of a JSON array parameter, for `x IN …`."""
    return f"(SELECT value FROM {dialect.json_values(param)})"

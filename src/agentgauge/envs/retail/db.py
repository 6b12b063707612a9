"""The retail world's database: schema, a cached template, fresh copies, canonical export.

Every trial needs its own copy of the initial database (pass^k assumes
independent trials). Building the database from scratch takes milliseconds;
copying a finished in-memory template with SQLite's online backup API takes
tens of microseconds, so templates are built once per distinct initial state
and copied per trial.
"""

from __future__ import annotations

import datetime
import json
import math
import sqlite3
import threading
from typing import Any, NoReturn

from agentgauge.envs.builtin import TaskDefect
from agentgauge.envs.retail import seed
from agentgauge.errors import value_kind

__all__ = [
    "JSON_COLUMNS",
    "STATE_SHAPE",
    "TABLES",
    "Template",
    "apply_overrides",
    "check_overrides",
    "export_state",
    "fresh_connection",
    "template",
]

#: table -> (columns in order, primary-key columns). Every column a task may override.
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "customers": (
        ("customer_id", "name", "email", "phone", "street", "city", "state", "zip"),
        ("customer_id",),
    ),
    "payment_methods": (
        ("payment_id", "customer_id", "kind", "description", "balance"),
        ("payment_id",),
    ),
    "products": (
        ("item_id", "product_id", "product", "options", "price", "available"),
        ("item_id",),
    ),
    "orders": (
        (
            "order_id",
            "customer_id",
            "status",
            "placed_on",
            "delivered_on",
            "payment_id",
            "tracking",
            "street",
            "city",
            "state",
            "zip",
        ),
        ("order_id",),
    ),
    "order_items": (("order_id", "line", "item_id", "price", "status"), ("order_id", "line")),
    "returns": (
        ("return_id", "order_id", "item_ids", "payment_id", "amount", "status"),
        ("return_id",),
    ),
    "exchanges": (
        ("exchange_id", "order_id", "item_ids", "new_item_ids", "payment_id", "price_difference"),
        ("exchange_id",),
    ),
    "refunds": (("refund_id", "order_id", "payment_id", "amount", "reason"), ("refund_id",)),
    "transfers": (("transfer_id", "customer_id"), ("transfer_id",)),
}

#: Columns holding JSON lists (stored as text, exported as lists).
JSON_COLUMNS = frozenset({"item_ids", "new_item_ids"})

#: Columns holding amounts of money (US dollars), which the tools add and compare: a
#: number each, or null where it may be (a balance: only gift cards keep one).
MONEY_COLUMNS = frozenset({"price", "amount", "price_difference", "balance"})
_MAY_BE_NULL = frozenset({"balance"})

#: What each column holds beyond its type (`_domain_defect`), where the tools rely on
#: it: ids and other text are text (a ZIP code 94110 written unquoted is a number,
#: which no lookup by ZIP matched), dates are ISO dates (compared as text), amounts are
#: not negative (a price difference may be), ``available`` is true or false, an order
#: line is a whole number from 1, and a status or kind is one the tools know.
_TEXT_OR_NULL = frozenset({("orders", "delivered_on"), ("orders", "tracking"),
                           ("transfers", "customer_id")})  # fmt: skip
_DATES = frozenset({"placed_on", "delivered_on"})
_NOT_NEGATIVE = frozenset({"price", "amount", "balance"})
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("payment_methods", "kind"): ("credit_card", "gift_card", "paypal"),
    ("orders", "status"): (
        "pending", "shipped", "delivered", "cancelled", "return requested",
        "exchange requested",
    ),
    ("order_items", "status"): ("ordered", "cancelled", "returned", "exchanged"),
}  # fmt: skip

#: Columns kept for inspection but left out of the state: optional arguments whose
#: omission is not a failure (a transfer without a customer id is still a transfer).
_NOT_EXPORTED = frozenset({("transfers", "customer_id")})

#: Tables the agent can change, exported by `export_state`.
MUTABLE = tuple(
    sorted(
        ("customers", "payment_methods", "orders", "returns", "exchanges", "refunds", "transfers")
    )
)


#: The keys of the exported state (`export_state`), in the form of
#: `BuiltinEnvironment.state_shape`: table -> any row key -> its exported columns.
STATE_SHAPE: dict[str, Any] = {
    table: {
        "*": {
            **{
                c: None
                for c in TABLES[table][0]
                if c != TABLES[table][1][0] and (table, c) not in _NOT_EXPORTED
            },
            **({"items": None} if table == "orders" else {}),
        }
    }
    for table in MUTABLE
}


def _create(conn: sqlite3.Connection) -> None:
    for table, (columns, key) in TABLES.items():
        cols = ", ".join(columns)
        conn.execute(f"CREATE TABLE {table} ({cols}, PRIMARY KEY ({', '.join(key)}))")
    # Rows a trial wrote, noted by the tools in the same transaction as the write (so a
    # failed tool notes nothing). Triggers would do it too, but parsing them costs each
    # fresh connection more than a whole trial.
    conn.execute("CREATE TABLE _dirty (tbl TEXT, key TEXT, PRIMARY KEY (tbl, key)) WITHOUT ROWID")


def touch(conn: sqlite3.Connection, table: str, key: str) -> None:
    """Note that a row of a mutable table changed (or was added)."""
    conn.execute("INSERT OR IGNORE INTO _dirty VALUES (?, ?)", (table, key))


def _populate(conn: sqlite3.Connection) -> None:
    conn.executemany("INSERT INTO customers VALUES (?,?,?,?,?,?,?,?)", seed.CUSTOMERS)
    conn.executemany("INSERT INTO payment_methods VALUES (?,?,?,?,?)", seed.PAYMENT_METHODS)
    conn.executemany("INSERT INTO products VALUES (?,?,?,?,?,?)", seed.PRODUCTS)
    address = {c[0]: c[4:8] for c in seed.CUSTOMERS}
    price = {p[0]: p[4] for p in seed.PRODUCTS}
    for order_id, cust, status, placed, delivered, pay, tracking, items in seed.ORDERS:
        conn.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (order_id, cust, status, placed, delivered, pay, tracking, *address[cust]),
        )
        line_status = "cancelled" if status == "cancelled" else "ordered"
        conn.executemany(
            "INSERT INTO order_items VALUES (?,?,?,?,?)",
            [(order_id, i + 1, item, price[item], line_status) for i, item in enumerate(items)],
        )


def check_overrides(overrides: dict[str, Any]) -> None:
    """Raise `TaskDefect` (a `ValueError`) naming the table, row and column of the first
    thing in a task's ``initial_state`` that is no row of the database: an unknown
    table or column, a row without its primary key, or a value SQLite cannot hold.

    Checked before any SQL runs: a list in a text column was reported as "SQLite
    refused the store" (as if the store were at fault), and an integer beyond 64 bits
    or an unquoted YAML date was a traceback.
    """
    for table, rows in overrides.items():
        at: tuple[str | int, ...] = ("initial_state", table)
        if table not in TABLES:
            raise TaskDefect(f"unknown table {table!r} (known: {', '.join(TABLES)})", at)
        if not isinstance(rows, list):
            raise TaskDefect("expected a list of rows", at, table)
        columns, key = TABLES[table]
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise TaskDefect("expected a mapping of column to value", (*at, i), f"{table}[{i}]")
            unknown = sorted(set(row) - set(columns))
            if unknown:
                raise TaskDefect(f"unknown column(s) {unknown} (its columns: {', '.join(columns)})",
                                 (*at, i, unknown[0]), f"{table}[{i}]")  # fmt: skip
            missing_key = [k for k in key if k not in row]
            if missing_key:
                raise TaskDefect(f"primary key column(s) {missing_key} missing", (*at, i),
                                 f"{table}[{i}]")  # fmt: skip
            for column, value in row.items():
                reason = _cell_defect(column, value) or _domain_defect(table, column, value)
                if reason is not None:
                    raise TaskDefect(reason, (*at, i, column), f"{table}[{i}].{column}")


def _cell_defect(column: str, value: Any) -> str | None:
    """Why ``value`` cannot go in ``column``, or ``None``: a JSON column holds a list of
    item ids (or null); a money column a number (a balance may be null); any other
    text, a number or a boolean (or null)."""
    if column in JSON_COLUMNS:
        if value is None or (isinstance(value, list) and all(type(v) is str for v in value)):
            return None
        wanted = "expected a list of item ids (text, such as '1001')"
        if not isinstance(value, list):
            return f"{wanted}, got {value_kind(value)}"
        j, item = next((j, v) for j, v in enumerate(value) if type(v) is not str)
        said = f"{wanted}; its item {j} is {value_kind(item)}"
        if type(item) is int or isinstance(item, datetime.date):  # YAML read 1001 as a number
            return f"{said}, {item} (quote it: '{item}')"
        return said
    if column in MONEY_COLUMNS and not (
        (value is None and column in _MAY_BE_NULL)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    ):
        # The tools add and compare these: "100.00" as text was a traceback mid-replay.
        null = " or null" if column in _MAY_BE_NULL else ""
        hint = f" (write it unquoted: {value.strip()})" if _numeric_text(value) else ""
        return f"expected a number of US dollars{null}, got {value_kind(value)}{hint}"
    if value is None or isinstance(value, str | bool):
        return None
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return None
        return f"{value} is out of range: an integer must lie within ±2^63 (what SQLite holds)"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"must be a finite number, got {value}"
    if isinstance(value, datetime.date):
        # YAML reads an unquoted 2024-06-01 as a date; the world keeps dates as text.
        return f"expected text or a number, got a date (quote it: '{value.isoformat()}')"
    return f"expected text or a number, got {value_kind(value)}"


def _domain_defect(table: str, column: str, value: Any) -> str | None:
    """Why ``value``, of a type ``column`` may hold (`_cell_defect`), is outside what the
    tools work with (`_CHOICES` and the sets above it), or ``None``."""
    if column in JSON_COLUMNS:
        return None
    if column in MONEY_COLUMNS:
        if column in _NOT_NEGATIVE and value is not None and value < 0:
            return f"expected 0 or more US dollars, got {value}"
        return None
    if column == "available":
        if isinstance(value, bool):
            return None
        return f"expected true or false (whether the item can be ordered), got {_shown(value)}"
    if column == "line":
        if type(value) is int and value >= 1:
            return None
        return f"expected the line's number, a whole number from 1, got {_shown(value)}"
    if value is None and (table, column) in _TEXT_OR_NULL:
        return None
    if not isinstance(value, str):
        hint = f" (quote it: '{value}')" if type(value) is int else ""
        null = " or null" if (table, column) in _TEXT_OR_NULL else ""
        return f"expected text{null}, got {_shown(value)}{hint}"
    if column in _DATES and not _iso_date(value):
        return f"expected a date, YYYY-MM-DD (the tools compare dates as text), got {value!r}"
    choices = _CHOICES.get((table, column))
    if choices is not None and value not in choices:
        return f"expected one of {', '.join(choices)} (what the tools know), got {value!r}"
    return None


def _iso_date(text: str) -> bool:
    """Whether ``text`` is a date written ``YYYY-MM-DD``."""
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _shown(value: Any) -> str:
    """``value``'s kind, with the value itself when it is a number or boolean."""
    kind = value_kind(value)
    return f"{kind}, {json.dumps(value)}" if isinstance(value, bool | int | float) else kind


def _numeric_text(value: Any) -> bool:
    """Whether ``value`` is text that reads as a finite number (``"100.00"``)."""
    try:
        return isinstance(value, str) and len(value) <= 40 and math.isfinite(float(value))
    except ValueError:
        return False


def apply_overrides(conn: sqlite3.Connection, overrides: dict[str, Any]) -> None:
    """Apply a task's ``initial_state``: ``{table: [row, ...]}``.

    A row whose primary key exists updates the columns it names; otherwise it is
    inserted (and must name every column). Raises `ValueError` naming the table
    and row for anything else (`check_overrides`).
    """
    check_overrides(overrides)
    for table, rows in overrides.items():
        for i, row in enumerate(rows):
            try:
                _apply_row(conn, table, row, i)
            except (sqlite3.Error, OverflowError, UnicodeError) as exc:  # not foreseen above
                at = ("initial_state", table, i)
                raise TaskDefect(f"SQLite refused the row: {exc}", at, f"{table}[{i}]") from None
    _check_gift_cards(conn, overrides)
    _check_references(conn, overrides)


#: ``(table, column, target table)``: each value of the column names a row of the
#: target (an id list: each of its ids). A task's row that names none made the tools
#: fail on the task's own data: an order whose payment method does not exist was
#: refused to the agent as its error ("payment method not found") when it cancelled
#: the order, and an order line whose item the catalogue lacks was left out of the
#: order the agent was shown (its total too).
_REFERENCES = (
    ("payment_methods", "customer_id", "customers"),
    ("orders", "customer_id", "customers"),
    ("order_items", "order_id", "orders"),
    ("order_items", "item_id", "products"),
    ("returns", "order_id", "orders"),
    ("returns", "item_ids", "products"),
    ("exchanges", "order_id", "orders"),
    ("exchanges", "item_ids", "products"),
    ("exchanges", "new_item_ids", "products"),
    ("refunds", "order_id", "orders"),
    ("transfers", "customer_id", "customers"),
)

#: Tables whose ``payment_id`` must be a payment method of the customer (the order's,
#: or that of the order the row is about), as the tools require of every payment.
_PAID = ("orders", "returns", "exchanges", "refunds")

_NOUN = {"customers": "customer", "orders": "order", "products": "item"}


def _check_references(conn: sqlite3.Connection, overrides: dict[str, Any]) -> None:
    """Raise `TaskDefect` for the first row that names a row no table has (`_REFERENCES`),
    or a payment method that is not its customer's, at the task's row that caused it:
    the row itself when the task writes it, else the task's payment method row it
    names, else ``initial_state``."""
    keys = {t: {str(r[0]) for r in conn.execute(f"SELECT {TABLES[t][1][0]} FROM {t}")}
            for t in _NOUN}  # fmt: skip
    for table, column, target in _REFERENCES:
        pk_columns = TABLES[table][1]
        for row in conn.execute(f"SELECT {', '.join(pk_columns)}, {column} FROM {table}"):
            value = row[-1]
            if value is None and (table, column) in _TEXT_OR_NULL:
                continue
            ids = json.loads(value) if column in JSON_COLUMNS and value is not None else [value]
            missing = [v for v in ids if v is None or str(v) not in keys[target]]
            if missing:
                reason = f"{column} {missing[0]!r} names no {_NOUN[target]} in {target}"
                pk = dict(zip(pk_columns, row[:-1], strict=True))
                _refuse(overrides, reason, table, pk, column)
    owner = dict(conn.execute("SELECT payment_id, customer_id FROM payment_methods"))
    customer_of = dict(conn.execute("SELECT order_id, customer_id FROM orders"))
    for table in _PAID:
        key = TABLES[table][1][0]
        via = "customer_id" if table == "orders" else "order_id"
        for row_key, ref, payment in conn.execute(f"SELECT {key}, {via}, payment_id FROM {table}"):
            customer = ref if table == "orders" else customer_of.get(ref)
            if owner.get(payment, ...) == customer:
                continue
            pk = {key: row_key}
            if payment not in owner:
                reason = f"payment_id {payment!r} names no payment method in payment_methods"
                _refuse(overrides, reason, table, pk, "payment_id")
            subject = (
                f"order {row_key!r}, of customer {customer!r},"
                if table == "orders"
                else f"{table[:-1]} {row_key!r}, of order {ref!r} of customer {customer!r},"
            )
            reason = (
                f"{subject} names payment method {payment!r}, which belongs to customer "
                f"{owner[payment]!r} (the tools refuse another customer's payment method)"
            )
            pm = {"payment_id": payment}
            mine = _row_of(overrides, table, pk) is not None
            if not mine and _row_of(overrides, "payment_methods", pm) is not None:
                _refuse(overrides, reason, "payment_methods", pm, "customer_id")
            _refuse(overrides, reason, table, pk, "payment_id")


def _row_of(overrides: dict[str, Any], table: str, pk: dict[str, Any]) -> int | None:
    """The index of the task's row of ``table`` with primary key ``pk``, or ``None``."""
    rows = overrides.get(table) or []
    found = (i for i, r in enumerate(rows) if all(r.get(k) == v for k, v in pk.items()))
    return next(found, None)


def _refuse(
    overrides: dict[str, Any], reason: str, table: str, pk: dict[str, Any], column: str
) -> NoReturn:
    """Raise `TaskDefect` with ``reason`` at the task's row of ``table`` with primary key
    ``pk`` (at its ``column`` when the row writes it); at ``initial_state`` when the
    task has no such row (a row of the world's own that the task's rows broke)."""
    i = _row_of(overrides, table, pk)
    if i is None:
        row_id = "/".join(str(v) for v in pk.values())
        raise TaskDefect(f"{table} row {row_id}: {reason}", ("initial_state",))
    at: tuple[str | int, ...] = ("initial_state", table, i)
    at += (column,) if column in overrides[table][i] else ()
    raise TaskDefect(reason, at, f"{table}[{i}]")


def _check_gift_cards(conn: sqlite3.Connection, overrides: dict[str, Any]) -> None:
    """Raise `TaskDefect` for a gift card left without a balance (a row that makes a
    card a gift card, or sets a gift card's balance to null): the tools add to it and
    compare it, which was a traceback mid-trial."""
    found = conn.execute(
        "SELECT payment_id FROM payment_methods WHERE kind = 'gift_card' AND balance IS NULL "
        "ORDER BY payment_id"
    ).fetchone()
    if found is None:
        return
    rows = overrides.get("payment_methods", [])
    i = next(i for i, row in enumerate(rows) if row.get("payment_id") == found[0])
    at: tuple[str | int, ...] = ("initial_state", "payment_methods", i)
    at += ("balance",) if "balance" in rows[i] else ()
    raise TaskDefect(
        f"gift card {found[0]!r} has no balance: a gift card keeps one (balance: 0.0, say)",
        at,
        f"payment_methods[{i}]",
    )


def _apply_row(conn: sqlite3.Connection, table: str, row: dict[str, Any], i: int) -> None:
    columns, key = TABLES[table]
    values = {
        c: json.dumps(v) if c in JSON_COLUMNS and v is not None else v for c, v in row.items()
    }
    where = " AND ".join(f"{k} = ?" for k in key)
    exists = conn.execute(f"SELECT 1 FROM {table} WHERE {where}", [values[k] for k in key])
    if exists.fetchone():
        sets = [c for c in values if c not in key]
        if sets:
            conn.execute(
                f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in sets)} WHERE {where}",
                [values[c] for c in sets] + [values[k] for k in key],
            )
        return
    missing = [c for c in columns if c not in values]
    if missing:
        at = ("initial_state", table, i)
        raise TaskDefect(f"new row needs column(s) {missing}", at, f"{table}[{i}]")
    conn.execute(
        f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})",
        [values[c] for c in columns],
    )


class Template:
    """A built initial database and its exported tables (as JSON text, copied on use)."""

    def __init__(self, overrides: dict[str, Any]) -> None:
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        _create(self.conn)
        _populate(self.conn)
        apply_overrides(self.conn, overrides)
        self.conn.commit()
        self.exported = {t: json.dumps(v) for t, v in export_state(self.conn).items()}


_templates: dict[str, Template] = {}
_lock = threading.Lock()


def template(overrides: dict[str, Any] | None = None) -> Template:
    """The (cached) template for an initial state; raises `ValueError` for bad overrides."""
    try:
        key = json.dumps(overrides or {}, sort_keys=True)
    except TypeError:  # a value JSON cannot hold (a YAML date): name it
        check_overrides(overrides or {})
        raise
    with _lock:
        found = _templates.get(key)
        if found is None:
            found = _templates[key] = Template(overrides or {})
        return found


def fresh_connection(base: Template) -> sqlite3.Connection:
    """A private in-memory copy of a template database."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    with _lock:
        base.conn.backup(conn)
    conn.row_factory = sqlite3.Row
    return conn


def export_state(
    conn: sqlite3.Connection, *, base: Template | None = None, clean: bool = False
) -> dict[str, Any]:
    """The mutable tables as canonical JSON-able data.

    ``{table: {primary key: {column: value}}}`` with keys sorted; an order also
    lists its ``items`` by line. Free text the agent writes (reasons, summaries)
    is not part of the state, so two correct trials export the same state.

    With ``base`` (the template the connection was copied from), the template's
    export is copied and only the rows the trial wrote (noted by triggers) are
    read again: a trial touches a handful of rows. Rows are rendered to JSON
    inside SQLite (JSON1), which is faster than building dicts in Python.
    ``clean=True`` (with ``base``) promises nothing was written: no query at all.
    """
    if base is None:
        return {t: json.loads(conn.execute(_TABLE_SQL[t]).fetchone()[0]) for t in MUTABLE}
    dirty: dict[str, list[str]] = {}
    if not clean:
        for tbl, key in conn.execute("SELECT tbl, key FROM _dirty"):
            dirty.setdefault(tbl, []).append(key)
    out: dict[str, Any] = {}
    for table in MUTABLE:
        rows: dict[str, Any] = json.loads(base.exported[table])
        if table in dirty:
            for key in dirty[table]:
                rows.pop(key, None)  # deleted rows stay gone; changed ones are re-read
            for key, text in conn.execute(_ROWS_SQL[table], (table,)):
                rows[str(key)] = json.loads(text)
            rows = dict(sorted(rows.items()))
        out[table] = rows
    return out


def _row_json(table: str) -> tuple[str, str]:
    """SQL for the primary key and the row's JSON object (columns sorted) of table ``t``."""
    columns, key = TABLES[table]
    fields = [c for c in columns if c != key[0] and (table, c) not in _NOT_EXPORTED]
    exprs = {c: f"json(t.{c})" if c in JSON_COLUMNS else f"t.{c}" for c in fields}
    if table == "orders":
        # order_items is keyed (order_id, line): the index walk yields lines in order.
        exprs["items"] = (
            "json((SELECT json_group_array(json_object('item_id', i.item_id, 'line', i.line, "
            "'price', i.price, 'status', i.status)) FROM order_items i "
            "WHERE i.order_id = t.order_id))"
        )
    pairs = ", ".join(f"'{c}', {exprs[c]}" for c in sorted(exprs))
    return f"t.{key[0]}", f"json_object({pairs})"


def _table_sql(table: str) -> str:
    key, obj = _row_json(table)
    return (
        f"SELECT json_group_object({key}, {obj}) "
        f"FROM (SELECT * FROM {table} ORDER BY {TABLES[table][1][0]}) t"
    )


def _rows_sql(table: str) -> str:
    key, obj = _row_json(table)
    return (
        f"SELECT {key}, {obj} FROM {table} t WHERE {key} IN (SELECT key FROM _dirty WHERE tbl = ?)"
    )


_TABLE_SQL = {table: _table_sql(table) for table in MUTABLE}
_ROWS_SQL = {table: _rows_sql(table) for table in MUTABLE}


def export_state_reference(conn: sqlite3.Connection) -> dict[str, Any]:
    """The same export built row by row in Python: a cross-check for the SQL version."""
    return {t: _export_table(conn, t) for t in MUTABLE}


def _export_table(conn: sqlite3.Connection, table: str) -> dict[str, Any]:
    items: dict[str, list[dict[str, Any]]] = {}
    if table == "orders":
        for row in conn.execute("SELECT * FROM order_items ORDER BY order_id, line"):
            items.setdefault(row[0], []).append(
                {"item_id": row[2], "line": row[1], "price": row[3], "status": row[4]}
            )
    columns, key = TABLES[table]
    rows: dict[str, Any] = {}
    for row in conn.execute(f"SELECT * FROM {table} ORDER BY {key[0]}"):
        record = {
            c: (json.loads(v) if c in JSON_COLUMNS and v is not None else v)
            for c, v in zip(columns, row, strict=True)
            if c != key[0] and (table, c) not in _NOT_EXPORTED
        }
        if table == "orders":
            record["items"] = items.get(row[0], [])
        rows[str(row[0])] = dict(sorted(record.items()))
    return rows

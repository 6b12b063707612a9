"""The retail world's tools: signatures (OpenAI function form) and implementations.

Tools enforce *data validity* — an unknown order, a cancelled order that cannot
be cancelled again, a payment method that belongs to someone else, an item
that is not in the order — and return an error result for it. They do NOT
enforce *policy* (identity verification, confirmation, return windows, refund
limits): following the policy is the agent's job, and breaking it is what the
graders and minefields catch. A tool that refused policy violations would make
every agent look compliant.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable
from typing import Any

from agentgauge.envs.base import ToolOutcome
from agentgauge.envs.retail.db import TABLES, touch

__all__ = ["CANCEL_REASONS", "IRREVERSIBLE", "REFUND_REASONS", "TOOLS", "call"]

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
REFUND_REASONS = ("damaged", "missing", "late")

#: Tools whose effect cannot be undone; the policy requires the user's explicit "yes" first.
IRREVERSIBLE = frozenset(
    {"cancel_pending_order", "return_delivered_order_items", "exchange_delivered_order_items",
     "issue_refund"}
)  # fmt: skip


class ToolError(Exception):
    """Invalid data in a call: reported to the agent as an error result."""


class WorldDatabaseError(RuntimeError):
    """SQLite refused what a tool did to the world's database: the world's failure
    (the task's, when its ``initial_state`` led there), neither the agent's nor the
    store's."""


def _str(desc: str) -> dict[str, Any]:
    return {"type": "string", "description": desc}


def _strs(desc: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": desc}


_ADDRESS = {
    "street": _str("Street and number."),
    "city": _str("City."),
    "state": _str("Two-letter state code."),
    "zip": _str("ZIP code."),
}


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOLS: list[dict[str, Any]] = [
    _fn("find_customer_by_email", "Find a customer's id by email address.",
        {"email": _str("The customer's email address.")}, ["email"]),
    _fn("find_customer_by_name_zip", "Find a customer's id by full name and ZIP code.",
        {"name": _str("First and last name."), "zip": _str("ZIP code.")}, ["name", "zip"]),
    _fn("get_customer_details", "A customer's profile, payment methods and order ids.",
        {"customer_id": _str("Customer id, e.g. C01.")}, ["customer_id"]),
    _fn("get_order_details", "An order's status, dates, items, address, payment and tracking.",
        {"order_id": _str("Order id, e.g. W1001.")}, ["order_id"]),
    _fn("get_product_details", "A product's variants (item ids), prices and availability.",
        {"product_id": _str("Product id, e.g. P1.")}, ["product_id"]),
    _fn("cancel_pending_order",
        "Cancel a pending order and refund it to the original payment method. IRREVERSIBLE.",
        {"order_id": _str("Order id."),
         "reason": {"type": "string", "enum": list(CANCEL_REASONS),
                    "description": "Why the customer cancels."}},
        ["order_id", "reason"]),
    _fn("return_delivered_order_items",
        "Return items of a delivered order; the refund goes to the given payment method. "
        "IRREVERSIBLE.",
        {"order_id": _str("Order id."), "item_ids": _strs("Item ids to return."),
         "payment_id": _str("Payment method to refund to.")},
        ["order_id", "item_ids", "payment_id"]),
    _fn("exchange_delivered_order_items",
        "Exchange items of a delivered order for other variants of the same product; the "
        "price difference is charged to or refunded to the payment method. IRREVERSIBLE.",
        {"order_id": _str("Order id."), "item_ids": _strs("Item ids to exchange."),
         "new_item_ids": _strs("Replacement item ids, in the same order."),
         "payment_id": _str("Payment method for the price difference.")},
        ["order_id", "item_ids", "new_item_ids", "payment_id"]),
    _fn("modify_pending_order_address", "Change the shipping address of a pending order.",
        {"order_id": _str("Order id."), **_ADDRESS},
        ["order_id", "street", "city", "state", "zip"]),
    _fn("modify_pending_order_payment",
        "Pay a pending order with another of the customer's payment methods.",
        {"order_id": _str("Order id."), "payment_id": _str("The new payment method.")},
        ["order_id", "payment_id"]),
    _fn("update_customer_address", "Change a customer's default address.",
        {"customer_id": _str("Customer id."), **_ADDRESS},
        ["customer_id", "street", "city", "state", "zip"]),
    _fn("issue_refund",
        "Refund an amount for a damaged, missing or late item of an order to a payment method. "
        "IRREVERSIBLE.",
        {"order_id": _str("Order id."), "amount": {"type": "number", "description": "US dollars."},
         "payment_id": _str("Payment method to refund to."),
         "reason": {"type": "string", "enum": list(REFUND_REASONS), "description": "Why."}},
        ["order_id", "amount", "payment_id", "reason"]),
    _fn("transfer_to_human",
        "Hand the conversation to a human agent, with a summary of the request.",
        {"summary": _str("What the customer needs and what was done so far."),
         "customer_id": _str("The verified customer's id, if known.")},
        ["summary"]),
]  # fmt: skip

_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def _check_arguments(name: str, args: dict[str, Any]) -> None:
    schema = _SCHEMAS[name]
    props: dict[str, Any] = schema["properties"]
    for key in schema["required"]:
        if key not in args:
            raise ToolError(f"missing required argument {key!r}")
    for key, value in args.items():
        if key not in props:
            raise ToolError(f"unknown argument {key!r}")
        kind = props[key]["type"]
        ok = (
            (kind == "string" and isinstance(value, str))
            or (kind == "number" and isinstance(value, int | float) and not isinstance(value, bool))
            or (
                kind == "array"
                and isinstance(value, list)
                and all(isinstance(v, str) for v in value)
            )
        )
        if not ok:
            raise ToolError(f"argument {key!r} must be a {kind}")
        if kind == "number" and not _finite(value):
            # JSON allows 1 followed by 400 zeros, which Python reads as an int that no
            # float holds: the tools' arithmetic would raise, as the world's failure.
            raise ToolError(f"argument {key!r} must be a finite number (at most about 1.8e308)")
        if "enum" in props[key] and value not in props[key]["enum"]:
            raise ToolError(f"argument {key!r} must be one of {props[key]['enum']}")


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)  # an int past float's range raises OverflowError
    except OverflowError:
        return False


# --------------------------------------------------------------------------- helpers


def _row(conn: sqlite3.Connection, sql: str, *params: Any) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(sql, params).fetchone()
    return row


def _order(conn: sqlite3.Connection, order_id: str) -> sqlite3.Row:
    row = _row(conn, "SELECT * FROM orders WHERE order_id = ?", order_id)
    if row is None:
        raise ToolError(f"order {order_id!r} not found")
    return row


def _payment_of(conn: sqlite3.Connection, payment_id: str, customer_id: str) -> sqlite3.Row:
    row = _row(conn, "SELECT * FROM payment_methods WHERE payment_id = ?", payment_id)
    if row is None:
        raise ToolError(f"payment method {payment_id!r} not found")
    if row["customer_id"] != customer_id:
        raise ToolError(f"payment method {payment_id!r} does not belong to the order's customer")
    return row


def _credit(conn: sqlite3.Connection, payment: sqlite3.Row, amount: float) -> None:
    """Money back to a payment method: only gift cards keep a balance we track."""
    if payment["kind"] == "gift_card":
        conn.execute(
            "UPDATE payment_methods SET balance = ? WHERE payment_id = ?",
            (round(payment["balance"] + amount, 2), payment["payment_id"]),
        )
        touch(conn, "payment_methods", payment["payment_id"])


def _charge(conn: sqlite3.Connection, payment: sqlite3.Row, amount: float) -> None:
    if payment["kind"] == "gift_card":
        if payment["balance"] + 1e-9 < amount:
            raise ToolError(
                f"gift card {payment['payment_id']!r} balance {payment['balance']:.2f} "
                f"does not cover {amount:.2f}"
            )
        conn.execute(
            "UPDATE payment_methods SET balance = ? WHERE payment_id = ?",
            (round(payment["balance"] - amount, 2), payment["payment_id"]),
        )
        touch(conn, "payment_methods", payment["payment_id"])


#: An order's total; 0 for an order with no items (SUM alone gives NULL).
_ORDER_TOTAL = "SELECT COALESCE(SUM(price), 0) FROM order_items WHERE order_id = ?"


def _next_id(conn: sqlite3.Connection, table: str, prefix: str) -> str:
    """The id of a row about to be inserted (noted as written): one more than the
    table's rows, or the next free one after it, since a task's ``initial_state`` may
    have taken it (``refund_id: F2`` beside no other refund)."""
    (n,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    key = TABLES[table][1][0]
    new_id = f"{prefix}{n + 1}"
    while _row(conn, f"SELECT 1 FROM {table} WHERE {key} = ?", new_id) is not None:
        n += 1
        new_id = f"{prefix}{n + 1}"
    touch(conn, table, new_id)
    return new_id


def _lines(conn: sqlite3.Connection, order_id: str, item_ids: list[str]) -> list[sqlite3.Row]:
    """The order's still-ordered lines for the given item ids (each id matches one line)."""
    if not item_ids:
        raise ToolError("item_ids must not be empty")
    available = list(
        conn.execute(
            "SELECT * FROM order_items WHERE order_id = ? AND status = 'ordered' ORDER BY line",
            (order_id,),
        )
    )
    picked: list[sqlite3.Row] = []
    for item in item_ids:
        match = next((r for r in available if r["item_id"] == item and r not in picked), None)
        if match is None:
            raise ToolError(f"item {item!r} is not an open item of order {order_id!r}")
        picked.append(match)
    return picked


def _order_view(conn: sqlite3.Connection, order: sqlite3.Row) -> dict[str, Any]:
    items = [
        {"item_id": r["item_id"], "product": r["product"], "options": r["options"],
         "price": r["price"], "status": r["status"]}
        for r in conn.execute(
            "SELECT i.item_id, p.product, p.options, i.price, i.status FROM order_items i "
            "JOIN products p USING (item_id) WHERE i.order_id = ? ORDER BY i.line",
            (order["order_id"],),
        )
    ]  # fmt: skip
    return {
        "order_id": order["order_id"],
        "customer_id": order["customer_id"],
        "status": order["status"],
        "placed_on": order["placed_on"],
        "delivered_on": order["delivered_on"],
        "tracking": order["tracking"],
        "payment_id": order["payment_id"],
        "address": {k: order[k] for k in ("street", "city", "state", "zip")},
        "items": items,
        "total": round(sum(i["price"] for i in items), 2),
    }


# --------------------------------------------------------------------------- tools


def _find_by_email(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    row = _row(conn, "SELECT customer_id FROM customers WHERE lower(email) = ?",
               a["email"].strip().lower())  # fmt: skip
    if row is None:
        raise ToolError("no customer with that email")
    return {"customer_id": row[0]}


def _find_by_name_zip(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    row = _row(conn, "SELECT customer_id FROM customers WHERE lower(name) = ? AND zip = ?",
               " ".join(a["name"].lower().split()), a["zip"].strip())  # fmt: skip
    if row is None:
        raise ToolError("no customer with that name and ZIP code")
    return {"customer_id": row[0]}


def _customer(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    c = _row(conn, "SELECT * FROM customers WHERE customer_id = ?", a["customer_id"])
    if c is None:
        raise ToolError(f"customer {a['customer_id']!r} not found")
    pays = conn.execute(
        "SELECT payment_id, kind, description, balance FROM payment_methods "
        "WHERE customer_id = ? ORDER BY payment_id", (c["customer_id"],)
    )  # fmt: skip
    orders = conn.execute(
        "SELECT order_id FROM orders WHERE customer_id = ? ORDER BY order_id", (c["customer_id"],)
    )
    return {
        "customer_id": c["customer_id"],
        "name": c["name"],
        "email": c["email"],
        "phone": c["phone"],
        "address": {k: c[k] for k in ("street", "city", "state", "zip")},
        "payment_methods": [
            {"payment_id": p[0], "kind": p[1], "description": p[2]}
            | ({"balance": p[3]} if p[1] == "gift_card" else {})
            for p in pays
        ],
        "orders": [o[0] for o in orders],
    }


def _get_order(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    return _order_view(conn, _order(conn, a["order_id"]))


def _product(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    rows = list(conn.execute("SELECT * FROM products WHERE product_id = ? ORDER BY item_id",
                             (a["product_id"],)))  # fmt: skip
    if not rows:
        raise ToolError(f"product {a['product_id']!r} not found")
    return {
        "product_id": a["product_id"],
        "name": rows[0]["product"],
        "variants": [
            {"item_id": r["item_id"], "options": r["options"], "price": r["price"],
             "available": bool(r["available"])}
            for r in rows
        ],
    }  # fmt: skip


def _cancel(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    order = _order(conn, a["order_id"])
    if order["status"] != "pending":
        raise ToolError(f"order {order['order_id']} is {order['status']}, not pending")
    (total,) = conn.execute(_ORDER_TOTAL,
                            (order["order_id"],)).fetchone()  # fmt: skip
    payment = _payment_of(conn, order["payment_id"], order["customer_id"])
    touch(conn, "orders", order["order_id"])
    conn.execute("UPDATE orders SET status = 'cancelled' WHERE order_id = ?", (order["order_id"],))
    conn.execute("UPDATE order_items SET status = 'cancelled' WHERE order_id = ?",
                 (order["order_id"],))  # fmt: skip
    refund_id = _next_id(conn, "refunds", "F")
    conn.execute("INSERT INTO refunds VALUES (?,?,?,?,?)",
                 (refund_id, order["order_id"], payment["payment_id"], round(total, 2),
                  "cancellation"))  # fmt: skip
    _credit(conn, payment, total)
    return {"order_id": order["order_id"], "status": "cancelled", "refund_id": refund_id,
            "refunded": round(total, 2), "payment_id": payment["payment_id"]}  # fmt: skip


def _delivered(conn: sqlite3.Connection, order_id: str) -> sqlite3.Row:
    order = _order(conn, order_id)
    if order["status"] not in ("delivered", "return requested", "exchange requested"):
        raise ToolError(f"order {order_id} is {order['status']}, not delivered")
    return order


def _return(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    order = _delivered(conn, a["order_id"])
    lines = _lines(conn, order["order_id"], a["item_ids"])
    payment = _payment_of(conn, a["payment_id"], order["customer_id"])
    amount = round(sum(r["price"] for r in lines), 2)
    for r in lines:
        conn.execute("UPDATE order_items SET status = 'returned' WHERE order_id = ? AND line = ?",
                     (order["order_id"], r["line"]))  # fmt: skip
    touch(conn, "orders", order["order_id"])
    conn.execute("UPDATE orders SET status = 'return requested' WHERE order_id = ?",
                 (order["order_id"],))  # fmt: skip
    return_id = _next_id(conn, "returns", "R")
    conn.execute("INSERT INTO returns VALUES (?,?,?,?,?,?)",
                 (return_id, order["order_id"], json.dumps(a["item_ids"]), payment["payment_id"],
                  amount, "requested"))  # fmt: skip
    _credit(conn, payment, amount)
    return {"return_id": return_id, "order_id": order["order_id"], "refund_amount": amount,
            "payment_id": payment["payment_id"]}  # fmt: skip


def _exchange(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    order = _delivered(conn, a["order_id"])
    lines = _lines(conn, order["order_id"], a["item_ids"])
    new_ids: list[str] = a["new_item_ids"]
    if len(new_ids) != len(lines):
        raise ToolError("new_item_ids must have one replacement per item in item_ids")
    diff = 0.0
    for line, new_id in zip(lines, new_ids, strict=True):
        old = _row(conn, "SELECT * FROM products WHERE item_id = ?", line["item_id"])
        new = _row(conn, "SELECT * FROM products WHERE item_id = ?", new_id)
        if new is None:
            raise ToolError(f"item {new_id!r} not found")
        assert old is not None
        if new["product_id"] != old["product_id"]:
            raise ToolError(
                f"item {new_id} is not a variant of the same product as {old['item_id']}"
            )
        if not new["available"]:
            raise ToolError(f"item {new_id} is not available")
        if new_id == old["item_id"]:
            raise ToolError(f"item {new_id} is the same as the item being exchanged")
        diff += new["price"] - line["price"]
    diff = round(diff, 2)
    payment = _payment_of(conn, a["payment_id"], order["customer_id"])
    if diff > 0:
        _charge(conn, payment, diff)
    elif diff < 0:
        _credit(conn, payment, -diff)
    for r in lines:
        conn.execute("UPDATE order_items SET status = 'exchanged' WHERE order_id = ? AND line = ?",
                     (order["order_id"], r["line"]))  # fmt: skip
    touch(conn, "orders", order["order_id"])
    conn.execute("UPDATE orders SET status = 'exchange requested' WHERE order_id = ?",
                 (order["order_id"],))  # fmt: skip
    exchange_id = _next_id(conn, "exchanges", "X")
    conn.execute("INSERT INTO exchanges VALUES (?,?,?,?,?,?)",
                 (exchange_id, order["order_id"], json.dumps(a["item_ids"]), json.dumps(new_ids),
                  payment["payment_id"], diff))  # fmt: skip
    return {"exchange_id": exchange_id, "order_id": order["order_id"], "price_difference": diff,
            "payment_id": payment["payment_id"]}  # fmt: skip


def _pending(conn: sqlite3.Connection, order_id: str) -> sqlite3.Row:
    order = _order(conn, order_id)
    if order["status"] != "pending":
        raise ToolError(f"order {order_id} is {order['status']}; only pending orders can change")
    return order


def _modify_address(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    order = _pending(conn, a["order_id"])
    touch(conn, "orders", order["order_id"])
    conn.execute("UPDATE orders SET street = ?, city = ?, state = ?, zip = ? WHERE order_id = ?",
                 (a["street"], a["city"], a["state"], a["zip"], order["order_id"]))  # fmt: skip
    return _order_view(conn, _order(conn, order["order_id"]))


def _modify_payment(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    order = _pending(conn, a["order_id"])
    new = _payment_of(conn, a["payment_id"], order["customer_id"])
    if new["payment_id"] == order["payment_id"]:
        raise ToolError("the order is already paid with that payment method")
    old = _payment_of(conn, order["payment_id"], order["customer_id"])
    (total,) = conn.execute(_ORDER_TOTAL,
                            (order["order_id"],)).fetchone()  # fmt: skip
    _charge(conn, new, total)
    _credit(conn, old, total)
    touch(conn, "orders", order["order_id"])
    conn.execute("UPDATE orders SET payment_id = ? WHERE order_id = ?",
                 (new["payment_id"], order["order_id"]))  # fmt: skip
    return _order_view(conn, _order(conn, order["order_id"]))


def _update_customer_address(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    if _row(conn, "SELECT 1 FROM customers WHERE customer_id = ?", a["customer_id"]) is None:
        raise ToolError(f"customer {a['customer_id']!r} not found")
    touch(conn, "customers", a["customer_id"])
    conn.execute(
        "UPDATE customers SET street = ?, city = ?, state = ?, zip = ? WHERE customer_id = ?",
        (a["street"], a["city"], a["state"], a["zip"], a["customer_id"]),
    )
    return _customer(conn, a)


def _refund(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    order = _order(conn, a["order_id"])
    if order["status"] in ("pending", "cancelled"):
        raise ToolError(f"order {order['order_id']} is {order['status']}; nothing was charged")
    (total,) = conn.execute(_ORDER_TOTAL,
                            (order["order_id"],)).fetchone()  # fmt: skip
    amount = float(a["amount"])
    if not 0 < amount <= total + 1e-9:
        raise ToolError(f"amount must be positive and at most the order total {total:.2f}")
    payment = _payment_of(conn, a["payment_id"], order["customer_id"])
    refund_id = _next_id(conn, "refunds", "F")
    conn.execute("INSERT INTO refunds VALUES (?,?,?,?,?)",
                 (refund_id, order["order_id"], payment["payment_id"], round(amount, 2),
                  a["reason"]))  # fmt: skip
    _credit(conn, payment, amount)
    return {"refund_id": refund_id, "amount": round(amount, 2), "payment_id": payment["payment_id"]}


def _transfer(conn: sqlite3.Connection, a: dict[str, Any]) -> Any:
    transfer_id = _next_id(conn, "transfers", "T")
    conn.execute("INSERT INTO transfers VALUES (?,?)", (transfer_id, a.get("customer_id")))
    return {"transfer_id": transfer_id, "status": "transferred to a human agent"}


_IMPL: dict[str, Callable[[sqlite3.Connection, dict[str, Any]], Any]] = {
    "find_customer_by_email": _find_by_email,
    "find_customer_by_name_zip": _find_by_name_zip,
    "get_customer_details": _customer,
    "get_order_details": _get_order,
    "get_product_details": _product,
    "cancel_pending_order": _cancel,
    "return_delivered_order_items": _return,
    "exchange_delivered_order_items": _exchange,
    "modify_pending_order_address": _modify_address,
    "modify_pending_order_payment": _modify_payment,
    "update_customer_address": _update_customer_address,
    "issue_refund": _refund,
    "transfer_to_human": _transfer,
}
assert set(_IMPL) == set(_SCHEMAS)


def call(conn: sqlite3.Connection, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    """Run one tool; invalid data gives an error result and leaves the state unchanged."""
    if name not in _IMPL:
        return ToolOutcome(content=f"Error: unknown tool {name!r}", is_error=True)
    try:
        _check_arguments(name, arguments)
        with conn:  # one transaction: a failing tool changes nothing
            content = _IMPL[name](conn, arguments)
    except ToolError as exc:
        return ToolOutcome(content=f"Error: {exc}", is_error=True)
    except sqlite3.Error as exc:
        # The world's own database, not the store: an error of the world (the CLI read
        # a sqlite3 error as the store's: "SQLite refused the store").
        raise WorldDatabaseError(f"the retail world's database refused {name}: {exc}") from exc
    return ToolOutcome(content=content, irreversible=name in IRREVERSIBLE)

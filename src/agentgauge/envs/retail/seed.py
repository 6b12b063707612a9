"""The retail world's initial data: ten customers, a small catalogue, thirty orders.

Written out by hand (not generated) so a task author can read which order is in
which state. The world's date is fixed (`TODAY`) so return windows never drift.
Prices are in US dollars; dates are ISO strings, which compare correctly as text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CUSTOMERS", "ORDERS", "PAYMENT_METHODS", "PRODUCTS", "TODAY"]

TODAY = "2024-06-15"

# customer_id, name, email, phone, street, city, state, zip
CUSTOMERS: list[tuple[str, ...]] = [
    ("C01", "Ana Silva", "ana.silva@example.com", "415-555-0101",
     "12 Valencia St", "San Francisco", "CA", "94110"),
    ("C02", "Ben Okafor", "ben.okafor@example.com", "212-555-0102",
     "5 W 20th St", "New York", "NY", "10001"),
    ("C03", "Chloe Martin", "chloe.martin@example.com", "312-555-0103",
     "800 W Fullerton Ave", "Chicago", "IL", "60614"),
    ("C04", "Dev Patel", "dev.patel@example.com", "512-555-0104",
     "201 Congress Ave", "Austin", "TX", "73301"),
    ("C05", "Elena Rossi", "elena.rossi@example.com", "617-555-0105",
     "77 Massachusetts Ave", "Cambridge", "MA", "02139"),
    ("C06", "Farid Haddad", "farid.haddad@example.com", "206-555-0106",
     "400 Pine St", "Seattle", "WA", "98101"),
    ("C07", "Grace Kim", "grace.kim@example.com", "404-555-0107",
     "10 Peachtree St", "Atlanta", "GA", "30303"),
    ("C08", "Hugo Lambert", "hugo.lambert@example.com", "303-555-0108",
     "1600 Champa St", "Denver", "CO", "80202"),
    ("C09", "Ines Duarte", "ines.duarte@example.com", "305-555-0109",
     "90 SW 8th St", "Miami", "FL", "33130"),
    ("C10", "Jonas Berg", "jonas.berg@example.com", "612-555-0110",
     "300 Nicollet Mall", "Minneapolis", "MN", "55401"),
]  # fmt: skip

# payment_id, customer_id, kind, description, gift-card balance (None for others)
PAYMENT_METHODS: list[tuple[Any, ...]] = [
    ("card_4242", "C01", "credit_card", "Visa ending 4242", None),
    ("gift_ana", "C01", "gift_card", "Gift card", 50.0),
    ("card_1881", "C02", "credit_card", "Visa ending 1881", None),
    ("paypal_ben", "C02", "paypal", "PayPal ben.okafor@example.com", None),
    ("card_3005", "C03", "credit_card", "Mastercard ending 3005", None),
    ("gift_chloe", "C03", "gift_card", "Gift card", 10.0),
    ("card_7777", "C04", "credit_card", "Visa ending 7777", None),
    ("gift_dev", "C04", "gift_card", "Gift card", 200.0),
    ("paypal_elena", "C05", "paypal", "PayPal elena.rossi@example.com", None),
    ("card_5150", "C06", "credit_card", "Amex ending 5150", None),
    ("gift_farid", "C06", "gift_card", "Gift card", 0.0),
    ("card_2020", "C07", "credit_card", "Visa ending 2020", None),
    ("card_9090", "C08", "credit_card", "Mastercard ending 9090", None),
    ("paypal_hugo", "C08", "paypal", "PayPal hugo.lambert@example.com", None),
    ("gift_ines", "C09", "gift_card", "Gift card", 35.0),
    ("card_6060", "C09", "credit_card", "Visa ending 6060", None),
    ("card_1234", "C10", "credit_card", "Visa ending 1234", None),
]

# item_id, product_id, product name, options, price, available
PRODUCTS: list[tuple[Any, ...]] = [
    ("1001", "P1", "T-shirt", "red, M", 25.0, True),
    ("1002", "P1", "T-shirt", "blue, M", 25.0, True),
    ("1003", "P1", "T-shirt", "red, L", 25.0, True),
    ("1004", "P1", "T-shirt", "blue, L", 27.0, True),
    ("2001", "P2", "Running shoes", "black, size 9", 120.0, True),
    ("2002", "P2", "Running shoes", "black, size 10", 120.0, True),
    ("2003", "P2", "Running shoes", "white, size 10", 125.0, False),
    ("2004", "P2", "Running shoes", "white, size 9", 125.0, True),
    ("3001", "P3", "Backpack", "green", 60.0, True),
    ("3002", "P3", "Backpack", "black", 60.0, True),
    ("4001", "P4", "Headphones", "wired", 80.0, True),
    ("4002", "P4", "Headphones", "wireless", 150.0, True),
    ("5001", "P5", "Coffee maker", "standard", 90.0, True),
    ("5002", "P5", "Coffee maker", "deluxe", 140.0, True),
    ("6001", "P6", "Desk lamp", "white", 35.0, True),
    ("6002", "P6", "Desk lamp", "black", 35.0, True),
    ("7001", "P7", "Water bottle", "500 ml", 15.0, True),
    ("7002", "P7", "Water bottle", "1 l", 20.0, True),
    ("8001", "P8", "Jacket", "M", 150.0, True),
    ("8002", "P8", "Jacket", "L", 150.0, True),
    ("8003", "P8", "Jacket", "XL", 155.0, False),
    ("9001", "P9", "Smart watch", "standard", 320.0, True),
]

# order_id, customer_id, status, placed_on, delivered_on, payment_id, tracking, item ids
ORDERS: list[tuple[Any, ...]] = [
    ("W1001", "C01", "pending", "2024-06-13", None, "card_4242", None, ["1001", "3001"]),
    ("W1002", "C01", "delivered", "2024-06-01", "2024-06-05", "card_4242", "1Z1002", ["2002"]),
    ("W1003", "C01", "delivered", "2024-04-02", "2024-04-06", "gift_ana", "1Z1003", ["7001"]),
    ("W1004", "C02", "shipped", "2024-06-10", None, "card_1881", "1Z1004", ["4002"]),
    ("W1005", "C02", "delivered", "2024-05-28", "2024-06-02", "paypal_ben", "1Z1005",
     ["1003", "6001"]),
    ("W1006", "C02", "pending", "2024-06-14", None, "card_1881", None, ["5001"]),
    ("W1007", "C03", "delivered", "2024-06-03", "2024-06-07", "card_3005", "1Z1007",
     ["8001", "1002"]),
    ("W1008", "C03", "pending", "2024-06-12", None, "card_3005", None, ["3002", "7002"]),
    ("W1009", "C03", "delivered", "2024-03-15", "2024-03-20", "card_3005", "1Z1009", ["5002"]),
    ("W1010", "C04", "shipped", "2024-06-11", None, "card_7777", "1Z1010", ["2001"]),
    ("W1011", "C04", "delivered", "2024-06-02", "2024-06-06", "card_7777", "1Z1011",
     ["4001", "7001"]),
    ("W1012", "C04", "pending", "2024-06-14", None, "card_7777", None, ["6002"]),
    ("W1013", "C05", "delivered", "2024-05-30", "2024-06-04", "paypal_elena", "1Z1013",
     ["2004"]),
    ("W1014", "C05", "pending", "2024-06-13", None, "paypal_elena", None, ["1004", "1001"]),
    ("W1015", "C05", "cancelled", "2024-05-01", None, "paypal_elena", None, ["3001"]),
    ("W1016", "C06", "delivered", "2024-06-08", "2024-06-12", "card_5150", "1Z1016",
     ["9001"]),
    ("W1017", "C06", "pending", "2024-06-14", None, "card_5150", None, ["8002"]),
    ("W1018", "C07", "delivered", "2024-05-20", "2024-05-24", "card_2020", "1Z1018",
     ["1001", "1002", "3002"]),
    ("W1019", "C07", "shipped", "2024-06-12", None, "card_2020", "1Z1019", ["7002"]),
    ("W1020", "C08", "delivered", "2024-06-06", "2024-06-10", "card_9090", "1Z1020",
     ["5001", "6001"]),
    ("W1021", "C08", "pending", "2024-06-13", None, "paypal_hugo", None, ["4001"]),
    ("W1022", "C08", "delivered", "2024-04-20", "2024-04-25", "card_9090", "1Z1022",
     ["8002"]),
    ("W1023", "C09", "delivered", "2024-06-01", "2024-06-04", "card_6060", "1Z1023",
     ["2001", "7002"]),
    ("W1024", "C09", "pending", "2024-06-14", None, "card_6060", None, ["1003"]),
    ("W1025", "C10", "delivered", "2024-05-25", "2024-05-29", "card_1234", "1Z1025",
     ["4002", "3001"]),
    ("W1026", "C10", "pending", "2024-06-12", None, "card_1234", None, ["5002", "7001"]),
    ("W1027", "C10", "shipped", "2024-06-09", None, "card_1234", "1Z1027", ["6002"]),
    ("W1028", "C06", "delivered", "2024-05-10", "2024-05-17", "card_5150", "1Z1028",
     ["1004"]),
    ("W1029", "C04", "delivered", "2024-05-25", "2024-05-30", "gift_dev", "1Z1029",
     ["8001"]),
    ("W1030", "C01", "shipped", "2024-06-12", None, "gift_ana", "1Z1030", ["6001"]),
]  # fmt: skip

"""Tool-design variants: the same six tools with other descriptions, arguments or observations.

The ladder's rung 2 asks what a tool's *design* does for a small model: each variant
changes one thing about :func:`react_lab.tools.default_tools`, so its effect is
measured alone; :func:`get_tools` stacks several (``"dedupe+dollars"``). Observation
changes wrap the real tool function, so every value still comes from the database
(the shipped database is only read).

The variants, and the one thing each changes, are :data:`ABOUT`; :data:`VARIANTS` maps
each name to the function that makes it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from ...tools import Tool, default_tools

__all__ = ["VARIANTS", "ABOUT", "get_tools", "DESCRIPTIONS", "describe"]

Tools = dict[str, Tool]

#: The ``desc`` variant's descriptions.
DESCRIPTIONS = {
    "list_invoices": "List a customer's invoices issued on or after a date (YYYY-MM-DD), newest "
    "first: the first row is the latest invoice. An invoice emailed twice is "
    "listed twice: count distinct invoice ids.",
    "get_charge": "Get one card charge by id: amount in cents (12900 cents = 129.00 dollars), "
    "status (succeeded, failed or refunded), failure_reason.",
    "search": "Search the help articles by keywords; returns article ids, titles and passages.",
    "find_invoice": "Get one invoice by id: total in dollars, status, issued and due dates, "
    "customer or supplier, charge_ids.",
    "get_payments": "List the payments made on an invoice, in dollars (refunds are negative); "
    "paid in full when they add up to the invoice total.",
    "calc": "Evaluate arithmetic such as 129.00 + 45.00.",
}


def _wrap(tool: Tool, post: Callable) -> Tool:
    """``tool`` with its result passed through ``post(result, *args, **kwargs)``.

    ``functools.wraps`` keeps the function's signature, so :func:`react_lab.tools.call_tool`
    still checks the number of arguments before the call."""
    fn = tool.fn

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return post(fn(*args, **kwargs), *args, **kwargs)

    return dataclasses.replace(tool, fn=wrapped)


def _keep(row: dict, keys) -> dict:
    return {k: row[k] for k in keys if k in row}


def described(tools: Tools) -> Tools:
    """Variant ``desc``: the descriptions of :data:`DESCRIPTIONS`."""
    return {
        n: dataclasses.replace(t, description=DESCRIPTIONS.get(n, t.description))
        for n, t in tools.items()
    }


_SLIM = {
    "list_invoices": ("invoice_id", "issued", "total", "status", "emailed_at"),
    "find_invoice": (
        "invoice_id",
        "kind",
        "customer_id",
        "supplier_name",
        "issued",
        "due",
        "total",
        "status",
        "charge_ids",
    ),
    "get_charge": ("charge_id", "invoice_id", "amount", "status", "failure_reason"),
}


def slim(tools: Tools) -> Tools:
    """Variant ``slim``: observations keep only the fields questions ask about."""

    def charge(d, *a, **k):
        d = _keep(d, _SLIM["get_charge"])
        if d.get("failure_reason") is None:
            d.pop("failure_reason", None)
        return d

    def payments(d, *a, **k):
        return {
            "invoice_id": d["invoice_id"],
            "payments": [_keep(p, ("paid_on", "amount", "method")) for p in d["payments"]],
        }

    return {
        **tools,
        "list_invoices": _wrap(
            tools["list_invoices"],
            lambda rows, *a, **k: [_keep(r, _SLIM["list_invoices"]) for r in rows],
        ),
        "find_invoice": _wrap(
            tools["find_invoice"], lambda d, *a, **k: _keep(d, _SLIM["find_invoice"])
        ),
        "get_charge": _wrap(tools["get_charge"], charge),
        "get_payments": _wrap(tools["get_payments"], payments),
    }


def _once(rows: list[dict]) -> list[dict]:
    """Invoice rows with each invoice once and an ``emails`` count instead of ``emailed_at``."""
    seen: dict[str, dict] = {}
    for row in rows:
        if row["invoice_id"] in seen:
            seen[row["invoice_id"]]["emails"] += 1
        else:
            seen[row["invoice_id"]] = {
                **{k: v for k, v in row.items() if k != "emailed_at"},
                "emails": 1,
            }
    return list(seen.values())


def dedupe(tools: Tools) -> Tools:
    """Variant ``dedupe``: list_invoices shows each invoice once, with how often it was emailed."""
    return {
        **tools,
        "list_invoices": _wrap(tools["list_invoices"], lambda rows, *a, **k: _once(rows)),
    }


def dollars(tools: Tools) -> Tools:
    """Variant ``dollars``: get_charge shows two amounts in place of ``amount``.

    ``amount_cents`` and ``amount_dollars``.
    """

    def both(d, *a, **k):
        out = {}
        for key, value in d.items():
            if key == "amount":
                out["amount_cents"], out["amount_dollars"] = value, round(value / 100, 2)
            else:
                out[key] = value
        return out

    return {**tools, "get_charge": _wrap(tools["get_charge"], both)}


def sums(tools: Tools) -> Tools:
    """Variant ``sums``: get_payments adds three fields.

    ``invoice_total``, ``total_paid`` and ``paid_in_full``.
    """
    find = tools["find_invoice"].fn

    def add(d, invoice_id, *a, **k):
        total = find(invoice_id)["total"]
        paid = round(sum(p["amount"] for p in d["payments"]), 2)
        return {
            **d,
            "invoice_total": total,
            "total_paid": paid,
            "paid_in_full": paid >= total - 0.005,
        }

    return {**tools, "get_payments": _wrap(tools["get_payments"], add)}


def statuses(tools: Tools) -> Tools:
    """Variant ``statuses``: find_invoice shows ``charges`` in place of ``charge_ids``.

    ``charges`` holds each charge's id and status, so a duplicate-charge check needs no
    get_charge calls.
    """
    get = tools["get_charge"].fn

    def add(d, *a, **k):
        if "charge_ids" not in d:
            return d
        d = dict(d)
        d["charges"] = [{"charge_id": c, "status": get(c)["status"]} for c in d.pop("charge_ids")]
        return d

    return {**tools, "find_invoice": _wrap(tools["find_invoice"], add)}


def since_optional(tools: Tools) -> Tools:
    """Variant ``since_optional``: ``since`` becomes optional (default: every invoice)."""
    t = tools["list_invoices"]
    fn = t.fn

    def listing(customer_id, since="2000-01-01"):
        return fn(customer_id, since)

    return {
        **tools,
        "list_invoices": dataclasses.replace(
            t,
            fn=listing,
            parameters={**t.parameters, "required": ["customer_id"]},
            description="List a customer's invoices, newest first; optionally only those issued on "
            "or after since (YYYY-MM-DD).",
        ),
    }


def search_top1(tools: Tools) -> Tools:
    """Variant ``search1``: search returns only the best-ranked passage."""
    return {
        **tools,
        "search": dataclasses.replace(
            _wrap(tools["search"], lambda rows, *a, **k: rows[:1]),
            description="Search the billing help articles; returns the best-matching passage.",
        ),
    }


def oldest_first(tools: Tools) -> Tools:
    """Variant ``oldest_first``: list_invoices lists oldest first, so the latest invoice is the
    *last* row -- the row nearest the model's next thought (the 135M model copies the
    nearest row)."""
    return {
        **tools,
        "list_invoices": dataclasses.replace(
            _wrap(tools["list_invoices"], lambda rows, *a, **k: list(reversed(rows))),
            description="List a customer's invoices issued on or after a date (YYYY-MM-DD), oldest "
            "first: the last row is the latest; totals in dollars.",
        ),
    }


def counted(tools: Tools) -> Tools:
    """Variant ``counted``: list_invoices returns ``{"invoices": [each once], "invoice_count": n}``,
    the count last, nearest the next thought."""
    return {
        **tools,
        "list_invoices": _wrap(
            tools["list_invoices"],
            lambda rows, *a, **k: {"invoices": _once(rows), "invoice_count": len(_once(rows))},
        ),
    }


#: Variant name -> function from a tool set to the changed tool set.
VARIANTS: dict[str, Callable[[Tools], Tools]] = {
    "desc": described,
    "slim": slim,
    "dedupe": dedupe,
    "dollars": dollars,
    "sums": sums,
    "statuses": statuses,
    "since_optional": since_optional,
    "search1": search_top1,
    "oldest_first": oldest_first,
    "counted": counted,
}


def get_tools(spec: str = "default", tools: Tools | None = None) -> Tools:
    """Return the tool set for ``spec``: ``"default"``, a variant name, or names joined by ``+``.

    Variants apply left to right to ``tools`` (default: :func:`react_lab.tools.default_tools`).
    Raises ``ValueError`` naming the known variants for an unknown one.
    """
    tools = default_tools() if tools is None else dict(tools)
    if spec == "default":
        return tools
    for name in spec.split("+"):
        if name not in VARIANTS:
            raise ValueError(f"unknown tool variant {name!r}; known: {', '.join(VARIANTS)}")
        tools = VARIANTS[name](tools)
    return tools


# --------------------------------------------------------------------------- distractor tools

#: Plausible billing-desk tools no task needs: ``(name, description, argument, table)``.
#: Each looks its argument up in a small fixed table (reference data, not the billing
#: database) and says "no entry" otherwise; the ladder adds them to measure what extra
#: tools cost a small model in prompt tokens and success.
DISTRACTORS = [
    (
        "get_tax_rate",
        "Get the sales tax or VAT rate of a country code such as DE.",
        "country",
        {"DE": 19.0, "FR": 20.0, "GB": 20.0, "US": 0.0, "NL": 21.0},
    ),
    (
        "get_exchange_rate",
        "Get the exchange rate from US dollars to a currency code such as EUR.",
        "currency",
        {"EUR": 0.92, "GBP": 0.79, "JPY": 151.2, "CAD": 1.36},
    ),
    (
        "get_plan",
        "Get a subscription plan's monthly price in dollars by its name.",
        "plan",
        {"Starter": 29.0, "Team": 129.0, "Business": 720.0, "Enterprise": 4200.0},
    ),
    (
        "get_support_hours",
        "Get the support desk's opening hours for a region such as EU.",
        "region",
        {"EU": "08:00-18:00 CET", "US": "09:00-17:00 ET", "APAC": "09:00-17:00 SGT"},
    ),
    (
        "get_holiday",
        "Say whether a date (YYYY-MM-DD) is a bank holiday for the billing desk.",
        "day",
        {"2026-01-01": "New Year's Day", "2026-12-25": "Christmas Day"},
    ),
    (
        "lookup_country",
        "Get a country's name from its two-letter code.",
        "country",
        {"DE": "Germany", "FR": "France", "GB": "United Kingdom", "US": "United States"},
    ),
    (
        "get_payment_method_fee",
        "Get the processing fee in percent of a payment method.",
        "method",
        {"card": 2.9, "bank_transfer": 0.0, "direct_debit": 0.8},
    ),
    (
        "get_late_fee",
        "Get the late fee in dollars of a plan's overdue invoice.",
        "plan",
        {"Starter": 5.0, "Team": 10.0, "Business": 25.0, "Enterprise": 0.0},
    ),
    (
        "get_discount_code",
        "Look up a discount code's percentage.",
        "code",
        {"WELCOME10": 10, "ANNUAL20": 20},
    ),
    (
        "get_timezone",
        "Get the time zone of a city.",
        "city",
        {"Berlin": "Europe/Berlin", "London": "Europe/London", "New York": "America/New_York"},
    ),
    (
        "get_invoice_template",
        "Get the name of the invoice template used for a language code.",
        "language",
        {"en": "classic-en", "de": "classic-de", "fr": "classic-fr"},
    ),
    (
        "get_dunning_step",
        "Describe the reminder sent on a given day after the due date.",
        "day",
        {"3": "friendly reminder", "14": "second notice", "30": "final notice"},
    ),
    (
        "get_refund_reason_code",
        "Get the code of a refund reason such as duplicate.",
        "reason",
        {"duplicate": "RR-01", "fraudulent": "RR-02", "requested_by_customer": "RR-03"},
    ),
    (
        "get_card_brand_limit",
        "Get the largest single charge in dollars a card brand allows.",
        "brand",
        {"visa": 50000.0, "mastercard": 50000.0, "amex": 25000.0},
    ),
    (
        "get_fiscal_quarter",
        "Get the fiscal quarter (Q1-Q4) of a month name.",
        "month",
        {"January": "Q1", "April": "Q2", "July": "Q3", "October": "Q4"},
    ),
    (
        "get_office_address",
        "Get the billing office's postal address in a country code.",
        "country",
        {"DE": "Lindenstrasse 4, Berlin", "US": "200 Main St, Boston"},
    ),
    (
        "get_status_meaning",
        "Explain an order status word from the shop (not invoices).",
        "status",
        {"shipped": "left the warehouse", "backordered": "waiting for stock"},
    ),
    (
        "get_api_version",
        "Get the billing API version of an SDK language.",
        "language",
        {"python": "2026-05-01", "node": "2026-04-15"},
    ),
]


def _distractor(name: str, description: str, argument: str, table: dict) -> Tool:
    def look_up(value: str):
        key = value.strip()
        hit = next((v for k, v in table.items() if k.lower() == key.lower()), None)
        return (
            {argument: key, "value": hit}
            if hit is not None
            else {argument: key, "value": None, "note": "no entry"}
        )

    schema = {
        "type": "object",
        "properties": {
            argument: {
                "type": "string",
                "minLength": 1,
                "maxLength": 60,
                "description": f"the {argument}",
                "examples": [next(iter(table))],
            }
        },
        "required": [argument],
        "additionalProperties": False,
    }
    return Tool(name, look_up, description, schema)


def with_distractors(tools: Tools, n: int) -> Tools:
    """Return ``tools`` plus the first ``n`` tools of :data:`DISTRACTORS`.

    ValueError when ``n`` is above their number.
    """
    if not 0 <= n <= len(DISTRACTORS):
        raise ValueError(f"n must be 0..{len(DISTRACTORS)}, not {n}")
    return {**tools, **{spec[0]: _distractor(*spec) for spec in DISTRACTORS[:n]}}


#: Variant name -> the one thing it changes (the one description docs and notebooks show).
ABOUT: dict[str, str] = {
    "desc": "descriptions that say what each tool answers and how to read it",
    "slim": "observations show fewer fields (no memo, names, creation times, null reasons)",
    "dedupe": "list_invoices shows each invoice once, with how many times it was emailed",
    "dollars": "get_charge shows the amount in cents and in dollars, both named",
    "sums": "get_payments adds the invoice total, the sum paid and paid_in_full",
    "statuses": "find_invoice lists each charge with its status (no get_charge calls needed)",
    "since_optional": "list_invoices[customer_id] lists every invoice; since is optional",
    "search1": "search returns only the best passage, not three",
    "oldest_first": "list_invoices lists oldest first: the latest invoice is the last row, "
    "nearest the model's next thought",
    "counted": "list_invoices (deduplicated) also says invoice_count",
}


def describe(variant: str) -> str:
    """The one-line description of ``variant`` (:data:`ABOUT`).

    ``ValueError`` for an unknown one.
    """
    if variant not in ABOUT:
        raise ValueError(f"unknown tool variant {variant!r}; known: {', '.join(VARIANTS)}")
    return ABOUT[variant]

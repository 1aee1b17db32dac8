"""The three task domains and their deterministic tool environments.

Each domain names its memory slots (with value pools), three tools (which slots and
task parameters each one takes), one slot the final answer reads directly, and a chain
of two advisory tools the agent may call during the history (slot a -> slot b -> slot
c), plus a second such chain on other slots that only the two-chain sets use
(:data:`TWO_CHAIN_SETS`). A tool is a pure function of its arguments, so a changed argument always changes
the observation and every run of the same arguments returns the same text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

MISSING = "unknown"
# The sets whose domains have both advisory chains (builder repair-5). Every other set
# has the first chain only, so its cases, and the published cells built on them, stay.
TWO_CHAIN_SETS = ("earned2_controlled", "earned2_stress")
# The retrieval sets (builder repair-6) are two-chain histories too.
_BOTH_CHAINS = (*TWO_CHAIN_SETS, "retrieval_controlled", "retrieval_stress")


@dataclass(frozen=True)
class Tool:
    """A deterministic tool: ``slots`` come from memory, ``params`` from the task."""

    name: str
    slots: tuple[str, ...]
    params: tuple[str, ...] = ()
    noun: str = "result"


@dataclass(frozen=True)
class Derivation:
    """A history-time advisory tool: reads one slot, recommends a value for another."""

    name: str
    source: str
    target: str
    question: str  # what the user asks before the agent calls it


@dataclass(frozen=True)
class Domain:
    """Slots (value pools), tools, the directly answered slot, task parameters, and a
    chain of two advisory tools (``chain[0].target == chain[1].source``)."""

    name: str
    slots: dict[str, tuple[str, ...]]
    tools: tuple[Tool, ...]
    direct: str
    params: dict[str, tuple[str, ...]]
    request: str  # the user's task request; {param} fields are filled per case
    chain: tuple[Derivation, ...] = ()
    # A second advisory chain on other slots, used only by :data:`TWO_CHAIN_SETS`: with
    # one chain, the session a lookup reads last is the fault whenever a chain family
    # holds the chain (nothing benign may be looked up after it), a rule no detector
    # should get.
    side_chain: tuple[Derivation, ...] = ()

    def derivations(self) -> tuple[Derivation, ...]:
        """Every advisory tool of the domain, either chain (names are unique, so a
        lookup's tool resolves the same whichever set it comes from)."""
        return self.chain + self.side_chain

    def chains(self, subset: str) -> tuple[tuple[Derivation, ...], ...]:
        """The advisory chains the cases of ``subset`` use: both for
        :data:`TWO_CHAIN_SETS`, the first one for every other set."""
        if subset in _BOTH_CHAINS and self.side_chain:
            return (self.chain, self.side_chain)
        return (self.chain,)


DOMAINS: dict[str, Domain] = {
    "shopping": Domain(
        "shopping",
        {
            "budget": ("300 EUR", "450 EUR", "600 EUR", "800 EUR", "1000 EUR", "1500 EUR"),
            "brand": ("Lenovo", "Dell", "HP", "Apple", "Asus", "Acer"),
            "delivery_city": ("Lisbon", "Porto", "Madrid", "Lyon", "Turin", "Ghent"),
            "membership": ("basic", "plus", "premium"),
            "payment": ("credit card", "PayPal", "bank transfer", "gift card"),
            "delivery_window": ("morning", "evening", "weekend"),
        },
        (
            Tool("catalogue.search", ("budget", "brand"), ("category",), "offer"),
            Tool("shipping.quote", ("delivery_city", "membership"), (), "shipping"),
            Tool("payment.plan", ("payment",), ("category",), "payment plan"),
        ),
        "delivery_window",
        {"category": ("laptop", "monitor", "tablet", "headphones", "phone")},
        "Find me a {category} I would buy, and tell me how it gets to me.",
        (
            Derivation(
                "advisor.tier", "budget", "membership", "Which loyalty tier suits my budget?"
            ),
            Derivation(
                "scheduler.slot",
                "membership",
                "delivery_window",
                "When should deliveries come, given my tier?",
            ),
        ),
        (
            Derivation(
                "checkout.methods",
                "delivery_city",
                "payment",
                "Which way of paying works best where you deliver to me?",
            ),
            Derivation(
                "deals.brand", "payment", "brand", "Which brand has the best deals for that?"
            ),
        ),
    ),
    "travel": Domain(
        "travel",
        {
            "home_airport": ("LIS", "OPO", "MAD", "CDG", "FRA", "AMS"),
            "airline": ("TAP", "Iberia", "Lufthansa", "KLM", "easyJet"),
            "hotel_budget": ("90 EUR", "120 EUR", "160 EUR", "220 EUR", "300 EUR"),
            "hotel_area": ("old town", "near the station", "seafront", "business district"),
            "car_class": ("compact", "estate", "electric", "no car"),
            "seat": ("window", "aisle", "extra legroom"),
        },
        (
            Tool("flights.search", ("home_airport", "airline"), ("destination",), "flight"),
            Tool("hotels.search", ("hotel_budget", "hotel_area"), ("destination",), "hotel"),
            Tool("cars.quote", ("car_class",), ("destination",), "car"),
        ),
        "seat",
        {"destination": ("Rome", "Vienna", "Prague", "Athens", "Dublin", "Oslo")},
        "Plan my trip to {destination}: flight, hotel and car.",
        (
            Derivation(
                "hubs.carrier",
                "home_airport",
                "airline",
                "Which airline flies best from my airport?",
            ),
            Derivation(
                "seats.advise", "airline", "seat", "Which seat should I book with that airline?"
            ),
        ),
        (
            Derivation(
                "stays.area",
                "hotel_budget",
                "hotel_area",
                "Which part of town can I stay in for what I pay a night?",
            ),
            Derivation(
                "cars.fit", "hotel_area", "car_class", "Which car should I rent staying there?"
            ),
        ),
    ),
    "customer_support": Domain(
        "customer_support",
        {
            "order_id": ("A-1042", "A-2291", "B-3307", "B-4480", "C-5126", "C-6613"),
            "plan_tier": ("free", "standard", "pro", "enterprise"),
            "region": ("EU", "UK", "US", "APAC"),
            "language": ("English", "Portuguese", "Spanish", "German"),
            "device": ("router X2", "router X5", "mesh kit M3", "modem D1"),
            "contact_channel": ("email", "phone", "chat"),
        },
        (
            Tool("orders.status", ("order_id",), ("issue",), "order status"),
            Tool("policy.lookup", ("plan_tier", "region"), ("issue",), "policy"),
            Tool("tickets.route", ("language", "device"), ("issue",), "ticket"),
        ),
        "contact_channel",
        {"issue": ("refund", "late delivery", "broken item", "billing error")},
        "I need help with a {issue}. What are my options?",
        (
            Derivation(
                "routing.locale", "region", "language", "Which support language fits my region?"
            ),
            Derivation(
                "routing.channel",
                "language",
                "contact_channel",
                "How should support contact me in that language?",
            ),
        ),
        (
            Derivation(
                "orders.device",
                "order_id",
                "device",
                "Which device was in the order I told you about?",
            ),
            Derivation(
                "plans.cover", "device", "plan_tier", "Which support plan covers that device?"
            ),
        ),
    ),
}


def run_tool(tool: Tool, args: dict[str, str]) -> str:
    """The observation of ``tool`` on ``args`` (slot values and task parameters).

    A missing slot gives a "no result" observation; otherwise a reference code derived
    from a hash of every argument, followed by the arguments themselves."""
    missing = [s for s in tool.slots if args.get(s, MISSING) == MISSING]
    if missing:
        return f"{tool.name}: no {tool.noun}, missing {', '.join(missing)}"
    keys = (*tool.params, *tool.slots)
    blob = "|".join(f"{k}:{args.get(k, '')}" for k in (tool.name, *keys))
    code = int(hashlib.sha256(blob.encode()).hexdigest()[:6], 16) % 9000 + 1000
    shown = ", ".join(f"{k} {args.get(k, '')}" for k in keys)
    return f"{tool.noun} #{code} for {shown}"


def run_derivation(d: Derivation, value: str, pool: tuple[str, ...]) -> str:
    """The advisory tool's recommendation for ``value``: a fixed function of its argument
    into the target slot's pool (``unknown`` in, ``unknown`` out)."""
    if value == MISSING:
        return MISSING
    h = int(hashlib.sha256(f"{d.name}|{value}".encode()).hexdigest()[:8], 16)
    return pool[h % len(pool)]


# -- memory record text ------------------------------------------------------------------

_RECORD = re.compile(r"^\[day (\d+)\] (profile summary: )?(.*) \(([^()]*)\)$")


def record_text(day: int, pairs: list[tuple[str, str]], source: str) -> str:
    """A memory record as stored: ``[day 4] budget = 600 EUR (chat)``; several pairs make
    a profile summary (``[day 9] profile summary: a = x; b = y (summary)``)."""
    body = "; ".join(f"{s} = {v}" for s, v in pairs)
    prefix = "profile summary: " if len(pairs) > 1 else ""
    return f"[day {day}] {prefix}{body} ({source})"


def parse_record(text: str) -> tuple[int, list[tuple[str, str]]] | None:
    """(day, [(slot, value), ...]) of a record text, or None when it is not a record."""
    m = _RECORD.match(text.strip())
    if not m:
        return None
    pairs = []
    for part in m.group(3).split("; "):
        slot, sep, value = part.partition(" = ")
        if sep:
            pairs.append((slot.strip(), value.strip()))
    return int(m.group(1)), pairs

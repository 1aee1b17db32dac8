"""What the agent knows about words: other names for every slot and value.

A user says "my delivery city is Porto"; an agent's own note may say "ship to the city
of port wine". Both mean ``delivery_city = Porto``. The lexicon lists, per domain, the
phrases that name each slot and each value, so the offline policy can read free text
the way an LLM would, and write paraphrased notes the way an LLM would. A literal text
rule (the repair track's floor) has only the canonical ``slot = value`` form.

Within a domain every alias names one slot or one value (checked by the tests), and a
note's phrasing never contains the canonical slot name.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache

from chronobench.tracks.repair.domains import DOMAINS, parse_record

# slot -> other names (the first is the natural name users say; the rest paraphrase)
SLOT_ALIASES: dict[str, tuple[str, ...]] = {
    "budget": ("budget", "spending cap", "price ceiling"),
    "brand": ("brand", "preferred maker"),
    "delivery_city": ("delivery city", "shipping destination"),
    "membership": ("membership", "loyalty tier"),
    "payment": ("payment method", "way to pay"),
    "delivery_window": ("delivery window", "drop-off time"),
    "home_airport": ("home airport", "usual departure airport"),
    "airline": ("airline", "preferred carrier"),
    "hotel_budget": ("hotel budget", "nightly room limit"),
    "hotel_area": ("hotel area", "neighbourhood to stay in"),
    "car_class": ("car class", "rental vehicle type"),
    "seat": ("seat", "place on the plane"),
    "order_id": ("order id", "order reference"),
    "plan_tier": ("plan tier", "subscription level"),
    "region": ("region", "part of the world"),
    "language": ("language", "preferred tongue"),
    "device": ("device", "hardware at home"),
    "contact_channel": ("contact channel", "way to reach them"),
}

# value -> paraphrases (the canonical value is always an alias too)
VALUE_ALIASES: dict[str, tuple[str, ...]] = {
    "300 EUR": ("three hundred euros",),
    "450 EUR": ("four hundred and fifty euros",),
    "600 EUR": ("six hundred euros",),
    "800 EUR": ("eight hundred euros",),
    "1000 EUR": ("one thousand euros",),
    "1500 EUR": ("fifteen hundred euros",),
    "Lenovo": ("the ThinkPad maker",),
    "Dell": ("the Round Rock maker",),
    "HP": ("Hewlett-Packard",),
    "Apple": ("the Cupertino maker",),
    "Asus": ("the ZenBook maker",),
    "Acer": ("the Aspire maker",),
    "Lisbon": ("the Portuguese capital",),
    "Porto": ("the city of port wine",),
    "Madrid": ("the Spanish capital",),
    "Lyon": ("the silk city on the Rhone",),
    "Turin": ("the Piedmont capital",),
    "Ghent": ("the Flemish city of the Gravensteen",),
    "basic": ("the entry level",),
    "plus": ("the middle level",),
    "premium": ("the top level",),
    "credit card": ("a Visa",),
    "PayPal": ("the online wallet",),
    "bank transfer": ("a wire",),
    "gift card": ("a store voucher",),
    "morning": ("before noon",),
    "evening": ("after work",),
    "weekend": ("on Saturdays",),
    "LIS": ("Humberto Delgado",),
    "OPO": ("Francisco Sa Carneiro",),
    "MAD": ("Barajas",),
    "CDG": ("Roissy",),
    "FRA": ("Frankfurt Main",),
    "AMS": ("Schiphol",),
    "TAP": ("the Portuguese flag carrier",),
    "Iberia": ("the Spanish flag carrier",),
    "Lufthansa": ("the crane airline",),
    "KLM": ("the Dutch flag carrier",),
    "easyJet": ("the orange low-cost airline",),
    "90 EUR": ("ninety euros",),
    "120 EUR": ("a hundred and twenty euros",),
    "160 EUR": ("a hundred and sixty euros",),
    "220 EUR": ("two hundred and twenty euros",),
    "old town": ("the historic centre",),
    "near the station": ("by the railway",),
    "seafront": ("on the waterfront",),
    "business district": ("among the office towers",),
    "compact": ("a small hatchback",),
    "estate": ("a station wagon",),
    "electric": ("a battery vehicle",),
    "no car": ("going without wheels",),
    "window": ("by the porthole",),
    "aisle": ("next to the gangway",),
    "extra legroom": ("with room for long legs",),
    "A-1042": ("the one ending in 1042",),
    "A-2291": ("the one ending in 2291",),
    "B-3307": ("the one ending in 3307",),
    "B-4480": ("the one ending in 4480",),
    "C-5126": ("the one ending in 5126",),
    "C-6613": ("the one ending in 6613",),
    "free": ("the no-cost plan",),
    "standard": ("the regular plan",),
    "pro": ("the professional plan",),
    "enterprise": ("the company-wide plan",),
    "EU": ("the European Union",),
    "UK": ("Britain",),
    "US": ("the States",),
    "APAC": ("Asia-Pacific",),
    "English": ("Shakespeare's tongue",),
    "Portuguese": ("Camoes' tongue",),
    "Spanish": ("Cervantes' tongue",),
    "German": ("Goethe's tongue",),
    "router X2": ("the X2 box",),
    "router X5": ("the X5 box",),
    "mesh kit M3": ("the M3 mesh",),
    "modem D1": ("the D1 unit",),
    "email": ("by mail",),
    "phone": ("by a call",),
    "chat": ("by live messaging",),
}
# The 300 EUR of a shopping budget and of a hotel budget share a paraphrase; each
# domain has only one of them, so within a domain every alias is unique.


def slot_phrase(slot: str) -> str:
    """The natural name of ``slot`` ("delivery city")."""
    return SLOT_ALIASES[slot][0]


def _pattern(phrase: str) -> str:
    return r"(?<![\w-])" + re.escape(phrase) + r"(?![\w-])"


@cache
def _domain_tables(domain: str) -> tuple[list[tuple[re.Pattern, str]], dict[str, list]]:
    """(slot patterns longest first, slot -> value patterns longest first)."""
    d = DOMAINS[domain]
    slots = [(p, s) for s in d.slots for p in SLOT_ALIASES[s]]
    slots.sort(key=lambda x: -len(x[0]))
    values = {}
    for s, pool in d.slots.items():
        vs = [(p, v) for v in pool for p in (v, *VALUE_ALIASES.get(v, ()))]
        vs.sort(key=lambda x: -len(x[0]))
        values[s] = [(re.compile(_pattern(p), re.IGNORECASE), v) for p, v in vs]
    return [(re.compile(_pattern(p), re.IGNORECASE), s) for p, s in slots], values


def find_pairs(text: str, domain: str) -> list[tuple[str, str]]:
    """(slot, value) pairs stated in free text: per sentence, a slot named by any of its
    aliases and the nearest following value of that slot's pool (any alias)."""
    slot_pats, value_pats = _domain_tables(domain)
    out: list[tuple[str, str]] = []
    for sentence in re.split(r"[.;!?\n]+", text):
        taken: list[tuple[int, int]] = []
        found: list[tuple[int, str]] = []
        for pat, slot in slot_pats:
            for m in pat.finditer(sentence):
                if not any(a < m.end() and m.start() < b for a, b in taken):
                    taken.append(m.span())
                    found.append((m.end(), slot))
        for end, slot in sorted(found):
            best = None
            for pat, value in value_pats[slot]:
                m = pat.search(sentence, end)
                if m and (best is None or m.start() < best[0]):
                    best = (m.start(), value)
            if best and (slot, best[1]) not in out:
                out.append((slot, best[1]))
    return out


def read_pairs(text: str, domain: str) -> list[tuple[str, str]]:
    """The (slot, value) pairs of a memory record: its ``slot = value`` body when it has
    one, otherwise what its free text says (a paraphrased note)."""
    parsed = parse_record(text)
    if parsed and parsed[1]:
        return [(s, v) for s, v in parsed[1] if s in DOMAINS[domain].slots or s == "last_choice"]
    return find_pairs(text, domain)


def paraphrase(slot: str, value: str, salt: str) -> str:
    """A note stating ``slot = value`` in other words (never the canonical slot name);
    which alias is used is a fixed function of ``salt``."""
    slots = SLOT_ALIASES[slot][1:]
    values = VALUE_ALIASES.get(value, (value,))
    h = int(hashlib.sha256(f"{slot}|{value}|{salt}".encode()).hexdigest()[:8], 16)
    templates = ("keep in mind: {s} is {v}", "reminder, the {s} is {v}", "the user's {s}: {v}")
    return templates[h % len(templates)].format(s=slots[h % len(slots)], v=values[h % len(values)])


def literal_repeat(text: str, slot: str, value: str) -> bool:
    """Whether ``text`` repeats ``slot = value`` word for word: a ``slot = value`` pair of
    its body, or the slot's name and the value both appearing in it (the floor's test)."""
    parsed = parse_record(text)
    if parsed and (slot, value) in parsed[1]:
        return True
    low = text.lower()
    names = (slot.lower(), slot.replace("_", " ").lower())
    return (
        any(n in low for n in names) and re.search(_pattern(value), text, re.IGNORECASE) is not None
    )

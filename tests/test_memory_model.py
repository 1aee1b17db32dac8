"""Model-based test: ChronoMem against a dict-of-snapshots model, integrity after every step."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests._memory_fixtures import APP, USER, hash_store

ITEMS = [f"i{k}" for k in range(5)]
TEXTS = [f"fact number {k} about Ann" for k in range(6)]  # few texts: twins are common
op_st = st.tuples(
    st.sampled_from(["add", "update", "delete"]), st.sampled_from(ITEMS), st.sampled_from(TEXTS)
)


class StoreVsModel(RuleBasedStateMachine):
    """History = list of (version id, snapshot); answers = (id, {item: text seen})."""

    @initialize()
    def start(self) -> None:
        self.mem = hash_store()
        self.history: list[tuple[int, dict[str, str]]] = [(0, {})]
        self.answers: list[tuple[int, dict[str, str | None]]] = []
        self.ever: set[str] = set()
        self.tainted: set[int] = set()
        self.touched: dict[int, set[str]] = {0: set()}  # items each version's events name

    def teardown(self) -> None:
        self.mem.close()

    @property
    def current(self) -> dict[str, str]:
        return self.history[-1][1]

    @rule(ops=st.lists(op_st, min_size=1, max_size=3, unique_by=lambda o: o[1]))
    def commit(self, ops: list[tuple[str, str, str]]) -> None:
        snap = dict(self.current)
        payload = []
        for op, item, text in ops:
            if op == "delete":
                payload.append({"op": "delete", "item_id": item})
                snap.pop(item, None)
            else:
                payload.append({"op": op, "item_id": item, "text": text})
                snap[item] = text
            self.ever.add(item)
        vid = self.mem.commit(APP, USER, payload, source="model", reason="step")
        self.history.append((vid, snap))
        self.touched[vid] = {item for _, item, _ in ops}

    @rule(data=st.data(), mode=st.sampled_from(["truncate", "revert"]))
    def rollback(self, data: st.DataObject, mode: str) -> None:
        if len(self.history) < 2:
            return
        i = data.draw(st.integers(0, len(self.history) - 1))
        vid, snap = self.history[i]
        new_head = self.mem.rollback_to_version(APP, USER, vid, mode=mode)
        if mode == "truncate":
            del self.history[i + 1 :]
            assert new_head == vid
        else:
            now = self.current
            self.touched[new_head] = {i for i in set(now) | set(snap) if now.get(i) != snap.get(i)}
            self.history.append((new_head, dict(snap)))

    @rule(data=st.data(), mode=st.sampled_from(["keep", "drop"]))
    def revert_commits(self, data: st.DataObject, mode: str) -> None:
        """Selective undo, against the rule replayed on the model's snapshots: every item
        a reverted commit touched takes the value the last commit outside the reverted set
        gave it (a later change to it is kept, or dropped with its whole commit)."""
        if len(self.history) < 2:
            return
        n = len(self.history)
        idxs = data.draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=2, unique=True))
        reverted = {self.history[i][0] for i in idxs}
        first = min(idxs)
        tainted: set[str] = set()
        last_outside: dict[str, int] = {}
        for j in range(first, n):
            vid, items = self.history[j][0], self.touched[self.history[j][0]]
            overlap = items & tainted
            if vid in reverted or (overlap and mode == "drop"):
                reverted.add(vid)
                tainted |= items
                continue
            tainted -= overlap
            for item in items:
                last_outside[item] = j
        affected = set().union(*(self.touched[v] for v in reverted))
        now, new = self.current, dict(self.current)
        for item in affected:
            value = self.history[last_outside.get(item, first - 1)][1].get(item)
            if value is None:
                new.pop(item, None)
            else:
                new[item] = value
        plan = self.mem.revert_commits(
            APP, USER, [self.history[i][0] for i in idxs], with_dependents=mode
        )
        assert set(plan.reverted) == reverted
        self.touched[plan.new_head] = {i for i in affected if new.get(i) != now.get(i)}
        self.history.append((plan.new_head, new))

    @rule(item=st.sampled_from(ITEMS))
    def redact(self, item: str) -> None:
        if item not in self.ever:
            return
        # auto: by id while the store still holds the item (any history, until compacted)
        report = self.mem.redact(APP, USER, item, reason="model")
        if report["by"] == "id":
            assert report["items"] == [item]
        for _, snap in self.history:
            snap.pop(item, None)
        # An answer that used the erased content stays flagged, even if the same text returns.
        self.tainted |= {aid for aid, seen in self.answers if seen.get(item) is not None}

    @rule(k=st.integers(0, len(TEXTS) - 1))
    def redact_text(self, k: int) -> None:
        needle = TEXTS[k].split(" about")[0]  # "fact number k": unique to one text
        self.mem.redact(APP, USER, needle, reason="model", by="text")
        for _, snap in self.history:
            for item in [i for i, t in snap.items() if needle in t]:
                del snap[item]
        self.tainted |= {
            aid for aid, seen in self.answers if any(t and needle in t for t in seen.values())
        }

    @rule(used=st.lists(st.sampled_from(ITEMS), min_size=1, max_size=3, unique=True))
    def record_answer(self, used: list[str]) -> None:
        aid = self.mem.record_answer(APP, USER, "an answer", used)
        self.answers.append((aid, {i: self.current.get(i) for i in used}))

    @rule()
    def compact(self) -> None:
        self.mem.compact(APP, USER)

    @invariant()
    def agrees_with_model(self) -> None:
        if not hasattr(self, "mem"):
            return
        assert self.mem.check_integrity(APP, USER) == []
        hist = self.mem.versions(APP, USER)
        assert [v.version_id for v in hist] == [vid for vid, _ in self.history]
        assert [v.seq for v in hist] == list(range(len(hist)))
        for vid, snap in self.history:
            assert self.mem.snapshot(APP, USER, vid) == snap
        assert self.mem.snapshot(APP, USER) == self.current
        flagged = {a["answer_id"] for a in self.mem.answers_relying_on_changed(APP, USER)}
        expected = self.tainted | {
            aid
            for aid, seen in self.answers
            if any(self.current.get(i) != t for i, t in seen.items())
        }
        assert flagged == expected


StoreVsModel.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
TestStoreVsModel = StoreVsModel.TestCase


@pytest.mark.usefixtures("on_postgres")
class TestStoreVsModelPostgres(StoreVsModel.TestCase):
    """The same state machine on the PostgreSQL backend (each example a new schema)."""

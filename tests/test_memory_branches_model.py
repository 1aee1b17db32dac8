"""Model-based test of branches: commit, branch, checkout, merge, delete and revert on a
store against a reference model (a version graph of snapshots), integrity after every
step, on both backends."""

from __future__ import annotations

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from chronomem import MergeConflictError, UnknownBranchError
from tests._memory_fixtures import APP, USER, hash_store

ITEMS = ["i0", "i1", "i2"]
TEXTS = ["red", "green", "blue"]
NAMES = ["main", "b1", "b2", "b3"]
op_st = st.tuples(
    st.sampled_from(["update", "delete"]), st.sampled_from(ITEMS), st.sampled_from(TEXTS)
)


class BranchesVsModel(RuleBasedStateMachine):
    """Model: every version is a node (snapshot, parents); each live branch is its list of
    version ids, root first; ``current`` is the checked-out branch."""

    @initialize()
    def start(self) -> None:
        self.mem = hash_store()
        self.nodes: dict[int, tuple[dict[str, str], tuple[int, ...]]] = {0: ({}, ())}
        self.lines: dict[str, list[int]] = {"main": [0]}
        self.current = "main"

    def teardown(self) -> None:
        self.mem.close()

    def head(self, name: str) -> int:
        return self.lines[name][-1]

    def snap(self, name: str) -> dict[str, str]:
        return self.nodes[self.head(name)][0]

    @rule(ops=st.lists(op_st, min_size=1, max_size=2, unique_by=lambda o: o[1]))
    def commit(self, ops: list[tuple[str, str, str]]) -> None:
        snap = dict(self.snap(self.current))
        payload = []
        for op, item, text in ops:
            if op == "delete":
                payload.append({"op": "delete", "item_id": item})
                snap.pop(item, None)
            else:
                payload.append({"op": "update", "item_id": item, "text": text})
                snap[item] = text
        vid = self.mem.commit(APP, USER, payload, source="model", reason="step")
        assert vid not in self.nodes  # ids unique across branches
        self.nodes[vid] = (snap, (self.head(self.current),))
        self.lines[self.current].append(vid)

    @rule(name=st.sampled_from(NAMES), data=st.data())
    def branch(self, name: str, data: st.DataObject) -> None:
        line = self.lines[self.current]
        at = data.draw(st.sampled_from(line))
        if name in self.lines:
            with pytest.raises(ValueError, match="already exists"):
                self.mem.branch(APP, USER, name, at=at)
            return
        made = self.mem.branch(APP, USER, name, at=at)
        assert made["head"] == at
        self.lines[name] = [0] if at == 0 else [0, at]

    @rule(name=st.sampled_from(NAMES))
    def checkout(self, name: str) -> None:
        if name not in self.lines:
            with pytest.raises(UnknownBranchError):
                self.mem.checkout(APP, USER, name)
            return
        assert self.mem.checkout(APP, USER, name)["head"] == self.head(name)
        self.current = name

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        if name == "main" or name == self.current:
            with pytest.raises(ValueError):
                self.mem.delete_branch(APP, USER, name)
        elif name not in self.lines:
            with pytest.raises(UnknownBranchError):
                self.mem.delete_branch(APP, USER, name)
        else:
            self.mem.delete_branch(APP, USER, name)
            del self.lines[name]

    def ancestors(self, vid: int) -> set[int]:
        seen, todo = {vid}, [vid]
        while todo:
            for p in self.nodes[todo.pop()][1]:
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return seen

    @rule(data=st.data(), strategy=st.sampled_from(["refuse", "ours", "theirs"]))
    def merge(self, data: st.DataObject, strategy: str) -> None:
        others = sorted(n for n in self.lines if n != self.current)
        if not others:
            return
        self.merge_from(data.draw(st.sampled_from(others)), strategy)

    def merge_from(self, name: str, strategy: str) -> None:
        common = self.ancestors(self.head(name)) & self.ancestors(self.head(self.current))
        best = [c for c in common if not any(c in self.ancestors(o) - {o} for o in common)]
        if len(best) != 1:  # crossed merges: no single merge base, the model has no answer
            return
        base, ours, theirs = self.nodes[best[0]][0], self.snap(self.current), self.snap(name)
        merged, conflicts = dict(ours), []
        for item in set(base) | set(ours) | set(theirs):
            b, o, t = base.get(item), ours.get(item), theirs.get(item)
            if o == t or t == b:
                continue
            if o != b:
                conflicts.append(item)
                if strategy != "theirs":
                    continue
            if t is None:
                merged.pop(item, None)
            else:
                merged[item] = t
        if conflicts and strategy == "refuse":
            with pytest.raises(MergeConflictError) as info:
                self.mem.merge(APP, USER, name, strategy=strategy)
            assert sorted(c["item"] for c in info.value.conflicts) == sorted(conflicts)
            event("merge refused")
            return
        got = self.mem.merge(APP, USER, name, strategy=strategy)
        event(f"merge written ({'with' if conflicts else 'no'} conflicts)")
        assert got["base"] == best[0]
        vid = got["version"]
        self.nodes[vid] = (merged, (self.head(self.current), self.head(name)))
        self.lines[self.current].append(vid)

    @rule(
        item=st.sampled_from(ITEMS),
        texts=st.lists(st.sampled_from(TEXTS), min_size=2, max_size=2),
        strategy=st.sampled_from(["refuse", "ours", "theirs"]),
    )
    def diverge_and_merge(self, item: str, texts: list[str], strategy: str) -> None:
        """Both sides change one item (a conflict unless the texts agree), then merge."""
        free = [n for n in NAMES if n not in self.lines]
        if not free:
            return
        here, name = self.current, free[0]
        made = self.mem.branch(APP, USER, name)
        assert made["head"] == self.head(here)
        self.lines[name] = [0] if self.head(here) == 0 else [0, self.head(here)]
        self.commit([("update", item, texts[0])])
        self.checkout(name)
        self.commit([("update", item, texts[1])])
        self.checkout(here)
        self.merge_from(name, strategy)

    @rule(data=st.data())
    def revert(self, data: st.DataObject) -> None:
        line = self.lines[self.current]
        if len(line) < 2:  # nothing committed on it: nothing to revert
            return
        target = data.draw(st.sampled_from(line))
        vid = self.mem.rollback_to_version(APP, USER, target, mode="revert")
        self.nodes[vid] = (dict(self.nodes[target][0]), (self.head(self.current),))
        line.append(vid)

    @invariant()
    def agrees_with_model(self) -> None:
        if not hasattr(self, "mem"):
            return
        assert self.mem.check_integrity(APP, USER) == []
        listed = {b["name"]: b["head"] for b in self.mem.branches(APP, USER)}
        assert listed == {n: self.head(n) for n in self.lines}
        hist = self.mem.versions(APP, USER)
        assert [v.version_id for v in hist] == self.lines[self.current]
        assert self.mem.snapshot(APP, USER) == self.snap(self.current)
        for name in self.lines:
            assert self.mem.diff(APP, USER, self.current, name) == {
                "a": self.head(self.current),
                "b": self.head(name),
                **_diff(self.snap(self.current), self.snap(name)),
            }


def _diff(a: dict[str, str], b: dict[str, str]) -> dict:
    return {
        "added": {k: v for k, v in b.items() if k not in a},
        "removed": {k: v for k, v in a.items() if k not in b},
        "changed": {k: {"before": a[k], "after": b[k]} for k in a if k in b and a[k] != b[k]},
    }


BranchesVsModel.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
TestBranchesVsModel = BranchesVsModel.TestCase


@pytest.mark.usefixtures("on_postgres")
class TestBranchesVsModelPostgres(BranchesVsModel.TestCase):
    """The same state machine on the PostgreSQL backend."""

    settings = settings(max_examples=8, stateful_step_count=15, deadline=None)

"""The request-blind floors (issue 15) do what their rows say, and never read the request.

Restore floors: the version they restore is the same whatever the request says (the
random one: a seeded draw, stable per request), and they read the restored state as
ChronoMem does. Verbatim-text RQ3 floors: the first N words of session 1 / of the whole
stream for a summary request, the abstain reply for every other question. Task routing
reads the question text only: the builders' summary question routes to a summary, no
LoCoMo question does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from chronobench.data.schema import MemoryOp, Stream, Write
from chronobench.protocols import Question, public_writes
from chronobench.systems.prompts import ABSTAIN_REPLY, is_summary_request
from chronobench.systems.stores import StoreProvider
from tests._protocol_fixtures import make_system

N = 20
REQUESTS = (
    "Go back to right after the conversation where Ann adopted the puppy",
    "Forget everything since last Tuesday",
    "undo the last three sessions please",
)


def _stream() -> Stream:
    writes = [
        Write(
            version=j,
            ops=[
                MemoryOp(
                    op="add",
                    item_id=f"m{j}",
                    text=f"[day {j}] Ann: event number {j} happened, word{j} alpha beta",
                    meta={"speaker": "Ann"},
                )
            ],
            labels={"session": (j + 1) // 2, "session_date": f"day {j}"},
            valid_time=f"day {j}",
        )
        for j in range(1, N + 1)
    ]
    return Stream(stream_id="t/s", dataset="t", granularity="x", sample_id="s", writes=writes)


@pytest.fixture(scope="module")
def stores() -> Any:
    provider = StoreProvider(embedder="hash")
    yield provider
    provider.close()


def _restored(name: str, stores: Any, request: str) -> tuple[int | None, list[str]]:
    system = make_system(name, stores)
    system.ingest(public_writes(_stream()))
    session = system.open_session()
    outcome = session.rollback(request)
    (reply,) = session.ask([Question("q1", "Summarise what has happened so far.")])
    session.close()
    system.close()
    return outcome.selected_version, list(reply.request.context)


@pytest.mark.parametrize(
    "name,version",
    [
        ("floor_restore_60", 12),
        ("floor_restore_75", 15),
        ("floor_restore_90", 18),
        ("floor_restore_v1", 1),
    ],
)
def test_fixed_restore_floors_restore_their_version_whatever_the_request(
    name: str, version: int, stores: Any
) -> None:
    for request in REQUESTS:
        selected, context = _restored(name, stores, request)
        assert selected == version
        # The summary reads the restored state only: writes 1..version, in order.
        assert [int(t.split()[1].rstrip("]")) for t in context] == list(range(1, version + 1))


def test_random_floor_is_seeded_and_restores_an_earlier_version(stores: Any) -> None:
    drawn = {r: _restored("floor_restore_random", stores, r)[0] for r in REQUESTS}
    assert drawn == {r: _restored("floor_restore_random", stores, r)[0] for r in REQUESTS}
    assert all(1 <= v <= N - 1 for v in drawn.values())
    many = {
        _restored("floor_restore_random", stores, f"request {i}")[0] for i in range(12)
    }  # hashing the text only spreads the draws
    assert len(many) > 3


def test_restore_floors_read_as_chronomem_reads_at_the_same_version(stores: Any) -> None:
    """Same store, retriever and budgets: at one version, the same prompt as the oracle."""
    from chronobench.protocols import OracleTarget

    question = Question("q1", "What happened at event number 3?")
    floor = make_system("floor_restore_75", stores)
    oracle = make_system("chronomem_oracle", stores)
    writes = public_writes(_stream())
    floor.ingest(writes)
    oracle.ingest(writes)
    a = floor.open_session()
    a.rollback("anything")
    b = oracle.open_oracle_session(OracleTarget(target_version=15))
    b.rollback("anything")
    assert a.ask([question])[0].request == b.ask([question])[0].request
    a.close()
    b.close()


@pytest.mark.parametrize("mode", ["truncate", "revert"])
def test_a_version_restored_again_gets_the_prompts_a_fresh_system_builds(
    mode: str, stores: Any
) -> None:
    """Prompts are shared between sessions of one system that restore the same version
    (ChronoMemSystem.prompts): each equals what a system that never saw the earlier
    sessions builds, at that version, after a refused rollback and without rollback."""
    from chronobench.protocols import OracleTarget
    from chronobench.systems.chronomem import forget_shared_prompts

    forget_shared_prompts()  # earlier tests read these writes from these stores
    questions = [
        Question("q1", "What happened at event number 3?"),
        Question("q2", "Summarise what has happened so far."),
        Question("q3", "What happened at event number 17?"),
    ]
    writes = public_writes(_stream())

    def prompts(system: Any, target: int | None) -> list[Any]:
        if target is None:  # a session without rollback (final_qa)
            session = system.open_session()
        else:
            session = system.open_oracle_session(OracleTarget(target_version=target))
            session.rollback("anything")
        out = [r.request for r in session.ask(questions)]
        session.close()
        return out

    shared = make_system("chronomem_oracle", stores, rollback_mode=mode)
    assert shared.mode == mode
    shared.ingest(writes)
    seen = [(t, prompts(shared, t)) for t in (5, 15, None, 5, 15, None, 15)]
    assert len(shared.prompts) == 3 * len(questions)
    for target, got in seen:
        forget_shared_prompts()  # a fresh system: one that shares no memo
        fresh = make_system("chronomem_oracle", stores, rollback_mode=mode)
        fresh.ingest(writes)
        assert got == prompts(fresh, target)
        fresh.close()
    assert seen[0][1] != seen[1][1]  # another version, other prompts
    # A refused rollback leaves a state the memo does not know: nothing is shared.
    chrono = make_system("chronomem", stores, rollback_mode=mode)
    chrono.ingest(writes)
    before = dict(chrono.prompts)
    session = chrono.open_session()
    outcome = session.rollback("zzz qqq")
    session.ask(questions)
    assert outcome.selected_version is None and "refused" in outcome.meta
    assert chrono.prompts == before
    session.close()
    shared.close()
    chrono.close()


def test_the_family_shares_prompts_across_systems_only_where_the_reading_is_the_same(
    stores: Any,
) -> None:
    """ChronoMem, the oracle and the restore floors read one process-wide memo per
    (stream, store settings, reader options): each system's prompts equal those it
    builds with the memo emptied before it; a system whose stores have other settings
    or whose reader has other options gets a memo of its own."""
    from chronobench.protocols import OracleTarget
    from chronobench.systems.chronomem import forget_shared_prompts

    questions = [
        Question("q1", "What happened at event number 3?"),
        Question("q2", "Summarise what has happened so far."),
        Question("q3", "What happened at event number 12?"),
    ]
    writes = public_writes(_stream())

    def asked(name: str, provider: Any, **options: Any) -> tuple[Any, list[list[Any]]]:
        system = make_system(name, provider, **options)
        system.ingest(writes)
        out = []
        for request in REQUESTS:
            if name == "chronomem_oracle":
                session = system.open_oracle_session(OracleTarget(target_version=12))
            else:
                session = system.open_session()
            session.rollback(request)
            out.append([r.request for r in session.ask(questions)])
            session.close()
        return system, out

    names = ["chronomem_oracle", "floor_restore_60", "floor_restore_random", "chronomem"]
    forget_shared_prompts()
    together = []
    for name in names:
        system, got = asked(name, stores)
        together.append(got)
        memo = system.prompts
        system.close()
    assert len(memo) < 3 * len(questions) * len(names)  # the systems' states overlapped
    for name, got in zip(names, together, strict=True):
        forget_shared_prompts()
        alone = asked(name, stores)[1]
        assert got == alone
    forget_shared_prompts()
    first, _ = asked("floor_restore_60", stores)
    other_reader, _ = asked("floor_restore_60", stores, top_k_items=2)
    assert other_reader.prompts is not first.prompts
    other = StoreProvider(embedder="hash")
    try:
        assert asked("floor_restore_60", other)[0].prompts is not first.prompts
        same = StoreProvider(embedder="hash", settings=stores.settings)
        assert asked("floor_restore_60", same)[0].prompts is first.prompts
        same.close()
    finally:
        other.close()
    forget_shared_prompts()


@pytest.mark.parametrize("n_words", [5, 150])
def test_text_floors_answer_summaries_with_leading_words_and_abstain_otherwise(
    n_words: int, stores: Any
) -> None:
    writes = public_writes(_stream())
    session1 = " ".join(c.text or "" for w in writes[:2] for c in w.changes).split()
    everything = " ".join(c.text or "" for w in writes for c in w.changes).split()
    for name, words in (("floor_session1_words", session1), ("floor_stream_words", everything)):
        system = make_system(name, stores, n_words=n_words)
        system.ingest(writes)
        session = system.open_session()
        assert session.rollback(REQUESTS[0]).selected_version is None
        summary, qa = session.ask(
            [Question("q1", "Summarise what has happened so far."), Question("q2", "Who is Ann?")]
        )
        assert summary.answer == " ".join(words[:n_words])
        assert qa.answer == ABSTAIN_REPLY


def test_text_floor_option_is_checked() -> None:
    from chronobench.errors import ConfigError
    from chronobench.systems.registry import check_system_options

    assert check_system_options("floor_stream_words", {"n_words": 80}, where="t") == {"n_words": 80}
    with pytest.raises(ConfigError):
        check_system_options("floor_stream_words", {"n_words": 0}, where="t")
    with pytest.raises(ConfigError):
        check_system_options("floor_session1_words", {"words": 10}, where="t")


def test_summary_routing_reads_the_text() -> None:
    from data_builders.probes import SUMMARY_QUESTION

    assert is_summary_request(SUMMARY_QUESTION)
    assert is_summary_request("Please summarize what we talked about")
    assert not is_summary_request("What did Caroline summarise in her talk?")


def test_no_locomo_question_routes_to_a_summary(locomo_path: Any) -> None:
    data = json.loads(locomo_path.read_text())
    questions = [qa["question"] for rec in data for qa in rec["qa"] if qa.get("question")]
    assert len(questions) > 1000
    assert not [q for q in questions if is_summary_request(q)]

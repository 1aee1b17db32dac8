"""Shared pieces of the MemoryAgentBench builders: chunk streams and located questions."""

from __future__ import annotations

from collections import Counter
from typing import Any

from chronobench.data.schema import MemoryOp, Stream, Write
from chronobench.text import contains_phrase, normalize
from data_builders.grammar import question_descriptor
from data_builders.probes import PoolQA
from data_builders.queries import Anchor


def row_stream_id(split: str, row: dict[str, Any], index: int) -> str:
    """Stable id of one row's stream."""
    return f"mab/{split}/{row['metadata']['source']}/{index}"


def texts_stream(
    stream_id: str, split: str, row: dict[str, Any], index: int, texts: list[str], granularity: str
) -> Stream:
    """One ``add`` write per text (chunk or statement)."""
    writes = [
        Write(
            version=k,
            ops=[MemoryOp(op="add", item_id=f"c{k}", text=t)],
            labels={"chunk": k, "row": index, "source": row["metadata"]["source"]},
        )
        for k, t in enumerate(texts, start=1)
    ]
    return Stream(
        stream_id=stream_id,
        dataset="mab",
        granularity=granularity,
        sample_id=f"{row['metadata']['source']}/{index}",
        writes=writes,
        meta={"split": split, "source": row["metadata"]["source"], "row": index},
    )


def locate_questions(
    row: dict[str, Any], stream: Stream
) -> tuple[list[PoolQA], list[Anchor], Counter[str]]:
    """Place each question at the first write containing a gold string (normalised) and
    make an anchor phrased from the question."""
    skipped: Counter[str] = Counter()
    norm_chunks = [normalize(" ".join(op.text or "" for op in w.ops)) for w in stream.writes]
    qas: list[PoolQA] = []
    anchors: list[Anchor] = []
    for i, (q, golds) in enumerate(zip(row["questions"], row["answers"], strict=True)):
        golds = [g for g in golds if normalize(g)]
        if not golds:
            skipped["question:no_gold"] += 1
            continue
        first = next(
            (
                k
                for k, text in enumerate(norm_chunks, start=1)
                if any(contains_phrase(text, normalize(g)) for g in golds)
            ),
            None,
        )
        if first is None:
            skipped["question:gold_not_in_context"] += 1
            continue
        qa_id = f"q{i}"
        qas.append(
            PoolQA(
                qa_id=qa_id,
                question=q,
                answers=golds,
                lo=first,
                hi=first,
                evidence_versions=[first],
            )
        )
        desc = question_descriptor(q)
        if desc is None:  # keep the question as an embedded topic ("who directed the film")
            body = q.strip().rstrip("?").strip()
            desc = ("topic", body[:1].lower() + body[1:] if body[:2].istitle() else body)
        anchors.append(
            Anchor(
                anchor_id=f"qa-{qa_id}",
                kind="qa",
                text=q,
                phrase=desc[1],
                form=desc[0],
                scope="passage",
                group=f"v{first}",
                anchor_version=first,
                restore_version=first,
                undo_version=first - 1,
                prefer_qa=frozenset({qa_id}),
            )
        )
    return qas, anchors, skipped

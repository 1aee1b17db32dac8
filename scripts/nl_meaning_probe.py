"""Would a stage that reads meaning re-pick the right chat for requests the rules read weakly?

A measurement on development request files, not part of the resolver. For each request the
rules' stage (the ``chronomem`` selector, as ``scripts/nl_eval.py`` runs it) ranks its top
``--top-k`` targets; a request is *gated* when its parse has no structure (no operator, named
time, ruled-out clause or knowledge state) and fewer than half of its clause's content words
occur in the top candidate's chat. For a gated request, each candidate's chat is shown by
its ``--lines`` messages nearest the clause (all-MiniLM-L6-v2 cosine), and one stage re-picks:

- ``lines``: the candidate whose nearest message is nearest the clause (no model but MiniLM);
- ``listwise``: Qwen2.5-Coder-1.5B-Instruct (CTranslate2 int8, greedy) reads the request and
  the numbered chats and names one;
- ``pairwise``: the same model is asked of each chat alone whether the request is about it;
  the candidate with the highest log-odds of "yes" over "no" wins.

Prints R@1 per file and style for the rules alone and with the stage. The model stages need
``pip install 'chronobench[llm-cpu,llm-ct2]'`` and ``python -m chronobench install-model
qwen-1b5``; their replies are cached in ``.cache/chronobench/nl_meaning_probe.json``.

    python scripts/nl_meaning_probe.py --stage pairwise data_builders/user_queries/locomo_polite_dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CACHE = Path(".cache/chronobench/nl_meaning_probe.json")
LIST_SYSTEM = (
    "You help an assistant find which past chat a user's request is about. You see the "
    "request and numbered chats, each with its date and a few of its messages. The request "
    "may describe the event in other words than the chat used. Reply with the number of the "
    "chat the request is about, and nothing else."
)
PAIR_SYSTEM = (
    "You check whether a user's request is about something said in a given chat. The "
    "request may use other words than the chat. Answer yes or no."
)


class Qwen:
    """Qwen2.5-Coder-1.5B on CTranslate2: a listwise pick and a pairwise yes/no log-odds."""

    def __init__(self, cache: dict[str, Any]) -> None:
        from chronobench.backbones.ct2_backend import CT2Backbone

        self.llm = CT2Backbone("qwen2.5-1.5b", threads=2)
        self.yes = [self.llm.token_id(t) for t in ("yes", "Yes")]
        self.no = [self.llm.token_id(t) for t in ("no", "No")]
        self.cache = cache

    def pick(self, query: str, chats: list[str]) -> int | None:
        from chronomem.generation import ChatMessage, GenerationParams, GenerationRequest

        body = (
            f"Request: {query}\n\n"
            + "\n\n".join(f"Chat {i}:\n{c}" for i, c in enumerate(chats, 1))
            + f"\n\nWhich chat (1-{len(chats)}) is the request about? Reply with the number only."
        )
        if body not in self.cache:
            req = GenerationRequest(
                messages=(ChatMessage("system", LIST_SYSTEM), ChatMessage("user", body)),
                params=GenerationParams(max_new_tokens=4, temperature=0.0),
                task="resolve",
            )
            self.cache[body] = self.llm.generate([req])[0].text
        m = re.search(r"\d+", self.cache[body])
        return int(m.group()) - 1 if m and 1 <= int(m.group()) <= len(chats) else None

    def yes_odds(self, query: str, chat: str) -> float:
        import numpy as np

        from chronomem.generation import ChatMessage

        body = (
            f"Request: {query}\n\nChat:\n{chat}\n\nIs the request about something said in "
            "this chat? Answer yes or no."
        )
        if body not in self.cache:
            logits = self.llm.next_token_logits(
                (ChatMessage("system", PAIR_SYSTEM), ChatMessage("user", body))
            )
            self.cache[body] = float(
                np.logaddexp.reduce(logits[self.yes]) - np.logaddexp.reduce(logits[self.no])
            )
        return float(self.cache[body])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--stage", choices=["lines", "listwise", "pairwise"], required=True)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--lines", type=int, default=3)
    ap.add_argument("--support", type=float, default=0.5, help="gate: clause words held below")
    args = ap.parse_args(argv)

    import numpy as np

    from chronobench.audit.data import compose_spec
    from chronobench.protocols import public_writes
    from chronobench.runner.components import resolve_cell
    from chronobench.selectors import APP
    from chronomem import parse as ps
    from chronomem.embedding_models import SentenceTransformerEmbedder
    from chronomem.words import RETRIEVAL_STOPWORDS, stem

    def words(text: str) -> set[str]:
        found = re.findall(r"[a-z0-9]+", text.lower())
        return {stem(w) for w in found if w not in RETRIEVAL_STOPWORDS and len(w) > 2}

    embed = SentenceTransformerEmbedder()
    cache: dict[str, Any] = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    model = Qwen(cache) if args.stage != "lines" else None
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path in args.files:
        spec = compose_spec(
            ["dataset=locomo_session", "task=selection", f"dataset.queries_file={path}"]
        )
        cell = resolve_cell(spec)
        data = cell.load_data()
        stores = cell.build_store_provider()
        records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]
        styles = {r["query"]: r.get("style", "-") for r in records}
        for stream in data.streams:
            writes = public_writes(stream)
            ing = stores.get(writes)
            by_j = {w.write_id: w for w in writes}
            for q in data.queries_by_stream().get(stream.stream_id, []):
                p = ps.parse(q.text)
                ranked = ing.store.resolve(APP, ing.user, q.text, k=args.top_k)
                got = [ing.j_of[v] for v, _ in ranked if v in ing.j_of]
                shift = 1 if p.intent == "undo" else 0
                events = [j + shift for j in got if j + shift in by_j]
                structured = bool(p.operators or p.time is not None or p.excluded or p.knowledge)
                clause = words(p.clause)
                held = words(by_j[events[0]].text) if events else set()
                gated = not structured and len(clause & held) < args.support * max(1, len(clause))
                pick = got[0] if got else None
                if gated and len(events) > 1:
                    qv = np.asarray(embed.encode([p.clause or q.text]))[0]
                    chats, nearest = [], []
                    for j in events:
                        lines = [c.text for c in by_j[j].changes if c.text]
                        cos = np.asarray(embed.encode(lines)) @ qv
                        best = sorted(np.argsort(-cos)[: args.lines])
                        nearest.append(float(cos.max()))
                        chats.append("\n".join(" ".join(lines[b].split())[:220] for b in best))
                    text = " ".join(q.text.split())
                    if args.stage == "lines":
                        choice: int | None = int(np.argmax(nearest))
                    elif args.stage == "listwise":
                        choice = model.pick(text, chats)  # type: ignore[union-attr]
                    else:
                        odds = [model.yes_odds(text, c) for c in chats]  # type: ignore[union-attr]
                        choice = int(np.argmax(odds))
                    if choice is not None:
                        pick = events[choice] - shift
                for key in ((path.stem, styles.get(q.text, "-")), (path.stem, "all")):
                    row = tally[key]
                    row[0] += 1
                    row[1] += bool(got) and got[0] == q.target_version
                    row[2] += pick == q.target_version
                    row[3] += gated
        stores.close()
        if cache:
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            CACHE.write_text(json.dumps(cache), encoding="utf-8")
    for (stem_, style), (n, rules, staged, gated) in sorted(tally.items()):
        print(
            f"{stem_:26s} {style:11s} n={n:3d} rules R@1={rules / n:.3f} "
            f"{args.stage} R@1={staged / n:.3f} gated={gated}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

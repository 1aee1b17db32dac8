#!/usr/bin/env bash
# Publish experiment=llm_cpu_qwen60 (Qwen2.5-Coder-1.5B, 60 LoCoMo queries) from its
# completions file, once every prompt has a reply; the board's small-LLM section then
# shows the 60-query rows.
#
#   scripts/publish_qwen60.sh COMPLETIONS [PROMPTS]
#
# COMPLETIONS: the gathered replies (/work/qwen60/completions.jsonl on the project machine,
# after the last `generate ... --reuse completions_tail.jsonl` pass); PROMPTS: the export
# they answer (default: the file beside COMPLETIONS). Run from a checkout with the venv
# active. Nothing is changed until every check passes:
#   1. COMPLETIONS holds exactly one reply to each of the 7,620 prompts of PROMPTS, each a
#      JSON object with an `id`, a string `text` and the model qwen2.5-1.5b, and none
#      marked as a placeholder (a dry run's stand-in);
#   2. the preset, exported again with this checkout's code, asks only prompts COMPLETIONS
#      answers (code that changed the prompts since the export is caught here).
# Then it copies COMPLETIONS to results/completions/llm_cpu_qwen60.jsonl (what
# backbone=replay_qwen60 reads), sets publish: true in configs/experiment/llm_cpu_qwen60.yaml,
# drops from experiment=llm_cpu_qwen the twelve RQ2/RQ3 cells the 60-query preset
# supersedes (their runs leave results/published: its 10 queries are among the 60, and a
# publishing preset's every cell must stay published), replays the preset (it publishes
# and rebuilds the board), rebuilds the board once more as the README says, restores the
# volatile results/LLM_CPU_SPEED.md, and lists what to commit. It commits nothing.
# Rerunning it after a failure is safe: every step checks before it changes anything.
#
# QWEN60_ALLOW_PLACEHOLDERS=1 accepts placeholder replies: for a dry run in a throwaway
# copy of the checkout only, never for figures anyone will read.
set -euo pipefail

if [ "$#" -lt 1 ] || [ "$#" -gt 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
completions="$(realpath "$1")"
prompts="$(realpath "${2:-$(dirname "$completions")/prompts.jsonl}")"
cd "$(dirname "$0")/.."
# This checkout's results/ is what gets published, whatever the shell had set.
unset CHRONOBENCH_RESULTS
for f in "$completions" "$prompts"; do
  [ -f "$f" ] || { echo "publish_qwen60: $f: no such file" >&2; exit 1; }
done
expected=7620 # the preset's export: 7,398 answers and 222 summaries
model=qwen2.5-1.5b

echo "publish_qwen60: 1/6 checking $completions against $prompts"
python - "$completions" "$prompts" "$expected" "$model" <<'PY'
import json
import os
import sys

completions, prompts, expected, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
allow_placeholders = os.environ.get("QWEN60_ALLOW_PLACEHOLDERS") == "1"


def records(path):
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                sys.exit(f"refused: {path}:{n}: not JSON ({err.msg})")
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                sys.exit(f"refused: {path}:{n}: expected a JSON object with a string `id`")
            yield n, rec


wanted = {rec["id"] for _, rec in records(prompts)}
if len(wanted) != expected:
    sys.exit(
        f"refused: {prompts} holds {len(wanted):,} distinct prompts, the preset's export "
        f"{expected:,}: give the file `run experiment=llm_cpu_qwen60 backbone=export` wrote"
    )
seen = {}
placeholders = 0
for n, rec in records(completions):
    where = f"{completions}:{n} (prompt {rec['id'][:12]}...)"
    if rec["id"] in seen:
        sys.exit(f"refused: {where}: a second reply to this prompt (first on line {seen[rec['id']]})")
    seen[rec["id"]] = n
    if not isinstance(rec.get("text"), str):
        sys.exit(f"refused: {where}: `text` must be the reply as a string")
    if rec.get("model") != model:
        sys.exit(f"refused: {where}: written by {rec.get('model')!r}, not {model}")
    if rec.get("placeholder"):
        placeholders += 1
missing = wanted - seen.keys()
extra = seen.keys() - wanted
if missing:
    sys.exit(
        f"refused: {len(missing):,} of {expected:,} prompts have no reply in {completions} "
        f"(first: {sorted(missing)[0]}); finish generating (chronobench generate --status "
        f"{prompts} {completions} says how far it is)"
    )
if extra:
    sys.exit(
        f"refused: {len(extra):,} replies in {completions} answer no prompt of {prompts} "
        f"(first: {sorted(extra)[0]}): a file of another export?"
    )
if placeholders and not allow_placeholders:
    sys.exit(
        f"refused: {placeholders:,} replies are placeholders (a dry run's stand-ins), "
        "not the model's"
    )
note = f" ({placeholders:,} PLACEHOLDERS: a dry run, never commit it)" if placeholders else ""
print(f"  {len(seen):,} replies, one to each of the {expected:,} prompts, all {model}{note}")
PY

work="$(mktemp -d "${TMPDIR:-/tmp}/publish-qwen60.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "publish_qwen60: 2/6 exporting the preset's prompts with this checkout's code"
CHRONOBENCH_RESULTS="$work/results" python -m chronobench run experiment=llm_cpu_qwen60 \
  backbone=export backbone.params.prompts="$work/prompts.jsonl" >"$work/export.log" 2>&1 || {
  tail -20 "$work/export.log" >&2
  echo "publish_qwen60: the export failed (log above)" >&2
  exit 1
}
python - "$work/prompts.jsonl" "$completions" <<'PY'
import json
import sys


def ids(path):
    with open(path, encoding="utf-8") as fh:
        return {json.loads(line)["id"] for line in fh if line.strip()}


asked, answered = ids(sys.argv[1]), ids(sys.argv[2])
if asked - answered:
    sys.exit(
        f"refused: the preset now asks {len(asked - answered):,} prompts the completions do "
        "not answer (the code changed since the export): generate them first "
        "(/work/qwen60/README.txt, 'IF THE CODE CHANGED')"
    )
print(f"  the preset asks {len(asked):,} prompts, every one answered")
PY

target=results/completions/llm_cpu_qwen60.jsonl
echo "publish_qwen60: 3/6 copying the replies to $target"
if ! cmp -s "$completions" "$target" 2>/dev/null; then
  cp "$completions" "$target.tmp"
  mv "$target.tmp" "$target"
fi

echo "publish_qwen60: 4/6 publish: true for llm_cpu_qwen60; llm_cpu_qwen keeps RQ1 and repair"
python - <<'PY'
import os
import re
from pathlib import Path

def write(path, text):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)

qwen60 = Path("configs/experiment/llm_cpu_qwen60.yaml")
text = qwen60.read_text(encoding="utf-8")
if re.search(r"^publish: false$", text, flags=re.M):
    write(qwen60, re.sub(r"^publish: false$", "publish: true", text, count=1, flags=re.M))
elif not re.search(r"^publish: true$", text, flags=re.M):
    raise SystemExit(f"refused: {qwen60} has no `publish: false` line to flip")
cells = {line for line in text.splitlines() if line.startswith("  - [")}
qwen10 = Path("configs/experiment/llm_cpu_qwen.yaml")
lines = qwen10.read_text(encoding="utf-8").splitlines(keepends=True)
kept, dropped = [], 0
rq3_comment = (
    "# RQ3: one summary per query of the state each system restored, up to 200 new tokens\n",
    "# (summary_max_new_tokens, apart from the answers' 32), on the same 10 queries.\n",
)
# It explained the order of the cells that leave.
oracle_comment = "# The oracle last: its prompts are ChronoMem's wherever both restore the same version.\n"
for line in lines:
    if line.rstrip("\n") in cells:
        dropped += 1
        continue
    if line in rq3_comment or line == oracle_comment:
        continue
    if line == "suite:\n":
        kept += [
            line,
            "# RQ2 and RQ3 (six systems, task=qa and task=summary) moved to\n",
            "# experiment=llm_cpu_qwen60: its 60 queries hold these 10, and the board shows one\n",
            "# row per system and model.\n",
        ]
        continue
    kept.append(line)
if dropped not in (0, 12):
    raise SystemExit(f"refused: {qwen10} shares {dropped} cells with {qwen60}, expected 12")
if dropped:
    write(qwen10, "".join(kept))
print(f"  {qwen60}: publish: true; {qwen10}: {dropped} cells dropped")
PY

echo "publish_qwen60: 5/6 replaying experiment=llm_cpu_qwen60 (publishes, rebuilds the board)"
python -m chronobench run experiment=llm_cpu_qwen60

echo "publish_qwen60: 6/6 the leaderboard"
python -m chronobench leaderboard
git checkout -- results/LLM_CPU_SPEED.md 2>/dev/null || true

echo
echo "publish_qwen60: done. What changed (commit it; nothing was committed):"
git status --short -- results configs tests
echo "Then: update the prose that names the 10-query rows or says the 60 are being"
echo "generated (the headers of configs/experiment/llm_cpu_qwen*.yaml,"
echo "configs/backbone/replay_qwen60.yaml, docs/llm_anywhere.md, README.md), and run"
echo "  python -m pytest -q -p no:cacheprovider tests/test_published_specs.py \\"
echo "      tests/test_project.py tests/test_small_llm_board.py -k 'qwen or small_llm'"

# Functions of the GPU runbooks (sourced after gpu-env.sh; they write under $OUT): the GPU tests' ids, and a
# selection of them run in 8 parallel shards.

collect_tests() {       # every test id of tests/test_submission.py and tests/test_robustness.py
  mkdir -p scratchpad/shards
  python -m pytest --collect-only -q -p no:cacheprovider tests/test_submission.py tests/test_robustness.py \
      2>/dev/null | grep "::" > scratchpad/shards/all.txt
}

run_shards() {          # run_shards LIMIT_S NAME: the ids in scratchpad/shards/selected.txt, 8 shards of LIMIT_S,
  # each a contiguous eighth of the list (neighbouring ids share shapes, so a shard compiles fewer plans)
  rm -f scratchpad/shards/shard-*.txt scratchpad/shards/out-*.log
  awk -v total="$(wc -l < scratchpad/shards/selected.txt)" \
      '{print > ("scratchpad/shards/shard-" int((NR - 1) * 8 / total) ".txt")}' scratchpad/shards/selected.txt
  for i in 0 1 2 3 4 5 6 7; do
    [ -s "scratchpad/shards/shard-$i.txt" ] || continue
    timeout "$1" python -m pytest -q -p no:cacheprovider $(cat "scratchpad/shards/shard-$i.txt") \
        > "scratchpad/shards/out-$i.log" 2>&1 &
  done
  wait
  for f in scratchpad/shards/out-*.log; do echo "$f: $(tail -1 "$f")"; done | tee "$OUT/$2.log"
  grep -h "FAILED\|Error\|assert" scratchpad/shards/out-*.log | head -40 | tee -a "$OUT/$2.log"
  cat scratchpad/shards/out-*.log > "$OUT/$2-full.log"     # one file: a call brings back only so many
}

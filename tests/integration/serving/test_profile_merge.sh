#!/usr/bin/env bash
# `loom model updateprofile` merges what it is given: a partial profile
# changes only its fields, the others keep their values (objects merge
# field by field, WMLA's own fields are kept); a field neither WMLA's nor
# already in the profile is refused naming it, and nothing changes then; a merged profile that breaks a rule
# is refused as a whole one would be.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 1
profile() { # profile PYTHON-EXPRESSION on the stored profile p
    "$LOOM" model viewprofile echo-so -j | python3 -c "import json,sys; p=json.load(sys.stdin); print($1)"
}
cat > "$WORK/profile.json" <<'P'
{"schema_version": "1.2", "type": "inference", "name": "echo-so", "replica": 1,
 "policy": {"kernel_min": 1, "kernel_max": 2, "task_batch_size": 8, "stream_number_per_group": 0,
            "site_field": "a"},
 "kernel": {"connection_timeout": 30, "gpu": "no", "envs": [{"name": "A", "value": "1"}]}}
P
expect_ok "deploy with a profile" "$LOOM" model deploy -p "$EX/echo-so" --profile "$WORK/profile.json"

printf '{"policy": {"task_batch_size": 4}}' > "$WORK/part.json"
expect_ok "a partial profile" "$LOOM" model updateprofile echo-so -f "$WORK/part.json"
expect_eq "its field changed" "$(profile 'p["policy"]["task_batch_size"]')" 4
expect_eq "the object's other fields kept" "$(profile 'p["policy"]["kernel_max"], p["policy"]["kernel_min"]')" "2 1"
expect_eq "WMLA's own field kept" "$(profile 'p["policy"]["stream_number_per_group"]')" 0
expect_eq "the other objects kept" "$(profile 'p["kernel"]["connection_timeout"], p["kernel"]["envs"][0]["name"]')" "30 A"

printf '{"kernel": {"envs": [{"name": "B", "value": "2"}]}, "replica": 2}' > "$WORK/part.json"
expect_ok "an array and a top-level field" "$LOOM" model updateprofile echo-so -f "$WORK/part.json"
expect_eq "the array replaced" "$(profile '[e["name"] for e in p["kernel"]["envs"]]')" "['B']"
expect_eq "the top-level field changed" "$(profile 'p["replica"]')" 2
expect_eq "the rest kept" "$(profile 'p["policy"]["task_batch_size"], p["kernel"]["gpu"]')" "4 no"

printf '{"policy": {"kernel_mx": 3, "task_batch_size": 16}}' > "$WORK/part.json"
expect_fails "an unknown field" "$LOOM" model updateprofile echo-so -f "$WORK/part.json"
expect_contains "is named" "$(cat "$WORK/out")" "policy.kernel_mx"
expect_eq "and nothing changed" "$(profile 'p["policy"]["task_batch_size"]')" 4
printf '{"policy": {"site_field": "b"}}' > "$WORK/part.json"
expect_ok "a field the deployed profile has, though not WMLA's" "$LOOM" model updateprofile echo-so -f "$WORK/part.json"
expect_eq "changes" "$(profile 'p["policy"]["site_field"]')" b
printf '{"replicas": 3}' > "$WORK/part.json"
expect_fails "an unknown top-level field" "$LOOM" model updateprofile echo-so -f "$WORK/part.json"
expect_contains "is named" "$(cat "$WORK/out")" "replicas"

printf '{"policy": {"kernel_min": -1}}' > "$WORK/part.json"
expect_fails "a merged profile that breaks a rule" "$LOOM" model updateprofile echo-so -f "$WORK/part.json"
expect_contains "names the rule" "$(cat "$WORK/out")" "kernel_min"
expect_eq "and nothing changed" "$(profile 'p["policy"]["kernel_min"]')" 1

expect_ok "the merged profile serves" "$LOOM" model start echo-so --wait 60
expect_ok "stop" "$LOOM" model stop echo-so
stop_host
finish

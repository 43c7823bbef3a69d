# tests/integration/host/erin_jobs.sh - sourced after lib.sh and start_host:
# a user erin and the jobs that fill the folders jobs reach. erin_logs_on
# adds erin and makes TOKEN hers (the administrator's in ADMIN_TOKEN);
# erin_submits submits her command exec (its id in ERIN_EXEC: it writes
# result.txt and a val_dict_list) and her one-experiment tuning task
# "erintask" from the same model directory.
erin_logs_on() {
    "$LOOM" user add erin -p erin-password >/dev/null
    ADMIN_TOKEN=$TOKEN
    TOKEN=$(curl -s -X POST -u erin:erin-password "$URL/auth/v1/logon" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))')
}

erin_submits() {
    mkdir -p "$WORK/model"
    cat > "$WORK/model/train.sh" <<'SH'
#!/bin/sh
echo "result of erin" > "$RESULT_DIR/result.txt"
printf '[{"step": 1, "loss": 0.5}]\n' > "$RESULT_DIR/val_dict_list.json"
SH
    chmod +x "$WORK/model/train.sh"
    tar -C "$WORK" -czf "$WORK/model.tgz" model
    local r
    r=$(http POST /platform/rest/deeplearning/v1/execs -F "file=@$WORK/model.tgz" \
        -F "args=--exec-start command --model-dir model --model-main train.sh")
    ERIN_EXEC=$(printf '%s' "${r#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id",""))')
    cat > "$WORK/task.json" <<'JSON'
{"hpoName": "erintask", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "Random", "maxJobNum": 1, "maxParalleJobNum": 1, "objectiveMetric": "loss",
             "objective": "minimize"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1}]}
JSON
    expect_contains "a tuning task" \
        "$(http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/task.json" -F "file=@$WORK/model.tgz")" "200 "
}

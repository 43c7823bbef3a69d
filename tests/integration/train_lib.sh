# tests/integration/train_lib.sh - a small training job for the integration
# tests: three classes of points in 8-D, an MLP spec for the native adapter,
# and helpers to submit and inspect execs. Needs lib.sh first.

make_data() { # make_data FILE ROWS SEED
    awk -v rows="$2" -v seed="$3" 'BEGIN { srand(seed)
        for (r = 0; r < rows; r++) { c = r % 3; line = c
            for (f = 0; f < 8; f++) { centre = (f % 3 == c) ? 0.75 : 0.25
                v = centre + (rand() + rand() + rand() - 1.5) * 0.45
                if (v < 0) v = 0; if (v > 1) v = 1
                line = line "," sprintf("%.4f", v) }
            print line } }' > "$1"
}
model_dir() { # model_dir DIR TRAIN_ROWS EPOCHS [extra training json]
    mkdir -p "$1"
    make_data "$1/train.csv" "$2" 1
    make_data "$1/test.csv" 600 2
    cat > "$1/edt.json" <<JSON
{"model": {"layers": [{"type": "dense", "units": 32}, {"type": "relu"}, {"type": "dense", "units": 3}]},
 "loss": "softmax_cross_entropy",
 "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
 "dataset": {"format": "csv", "train": "train.csv", "test": "test.csv", "label_column": 0, "scale": 1},
 "training": {"epochs": $3, "batch_size": 16 ${4:-}}}
JSON
}
# A wider model than model_dir's (two hidden layers of UNITS, default 1024),
# so that an epoch lasts long enough to be watched or interrupted.
wide_model() { # wide_model DIR TRAIN_ROWS EPOCHS [UNITS]
    model_dir "$1" "$2" "$3"
    python3 - "$1/edt.json" "${4:-1024}" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
units = int(sys.argv[2])
spec["model"]["layers"] = [{"type": "dense", "units": units}, {"type": "relu"},
                           {"type": "dense", "units": units}, {"type": "relu"},
                           {"type": "dense", "units": 3}]
json.dump(spec, open(sys.argv[1], "w"))
PY
}
submit() { # submit ARGS... ; prints the exec id
    "$LOOM" exec start --exec-start edt "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
view() { "$LOOM" --json exec view "$1"; }
field() { # field ID PYTHON-EXPRESSION over the view as v
    view "$1" | python3 -c "import json,sys; v=json.load(sys.stdin); print($2)"
}
wait_for() { # wait_for ID PYTHON-CONDITION SECONDS
    for _ in $(seq 1 $(( $3 * 10 ))); do
        [ "$(field "$1" "$2" 2>/dev/null)" = "True" ] && return 0
        sleep 0.1
    done
    return 1
}
every_epoch_once='all(e["exactlyOnce"] and e["samples"] == e["expected"] and e["duplicates"] == 0 for e in v["training"]["epochsDone"])'

#!/usr/bin/env bash
# bench/serve/run.sh - inference serving under wrk, loom beside nginx in the
# same run:
#   1. echo kernels (.so, Lua, libffi) at 64 connections: req/s and p99,
#      beside nginx answering a fixed body, the two in turns (TURNS, default
#      5) with the median of the turns' ratios (the target: >= 80 % of nginx;
#      over HTTPS >= 60 % of nginx over HTTPS),
#      and the CPU time loom (host and kernel) spent per request, which the
#      machine's other load sways less than req/s;
#   2. the Fashion-MNIST MLP (native kernel, trained here for one epoch):
#      task_batch_size 32 against 1 under load (target >= 3x), and p50 at one
#      connection (the batching delay: target <= 2 ms more);
#   3. autoscaling under a step in load: instances over time, requests lost;
#   v2. the echo kernels of a v2 model (echo-so-v2, echo-lua-v2, echo-ffi):
#      an Open Inference Protocol v2 request decoded by the host, its
#      tensors to the kernel and its answer encoded, at 64 connections:
#      req/s, p99 and CPU/request beside the raw echo's (section 1's, when
#      it ran).
#
# usage: bench/serve/run.sh [BUILD_DIR] [SECONDS]   (default: build, 5)
#        SECTIONS="echo v2 mlp scale" (the default: all four) picks some.
#        PROTO=https: loom and nginx both serve HTTPS (TLS 1.3, kept alive),
#        with a certificate (EC P-256) made here by openssl.
# Needs wrk and nginx (Debian's wrk, nginx-light) and the serving examples
# (built with the tree). Each figure is the median of three wrk runs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
secs=${2:-5}
SECTIONS=${SECTIONS:-echo v2 mlp scale}
PROTO=${PROTO:-http}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
LOOM=$build/bin/loom
EX=$build/examples/serving
for t in wrk nginx; do command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "missing $t (apt-get install wrk nginx-light)" >&2; exit 1; }; done
[ -x "$LOOM" ] && [ -d "$EX/echo-so" ] || { echo "build the tree first (cmake --build $build)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/loom-bench-serve-XXXXXX")
chmod o+x "$WORK" # run as root, jobs and kernels run under accounts of their own that pass through
export LOOM_HOME=$WORK/home
unset LOOM_HOST
HOST_PID= NGINX_PID=
cleanup() {
    if [ -n "$HOST_PID" ] && ! kill -0 "$HOST_PID" 2>/dev/null; then
        echo "the loom host died; its last output:" >&2
        tail -n 20 "$WORK/serve.out" >&2
    fi
    [ -n "$HOST_PID" ] && kill "$HOST_PID" 2>/dev/null && wait "$HOST_PID" 2>/dev/null
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

TLS_FLAGS="" NGINX_TLS="" NGINX_LISTEN_TLS=""
if [ "$PROTO" = https ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
    export LOOM_CA_CERT=$WORK/cert.pem
    TLS_FLAGS="--tls-cert $WORK/cert.pem --tls-key $WORK/key.pem"
    NGINX_LISTEN_TLS=" ssl"
    NGINX_TLS="ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem; ssl_protocols TLSv1.3;"
fi

# --- nginx: a fixed JSON body on a free port ---
NPORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/nginx/logs"
cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes auto;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx;
    server {
        listen 127.0.0.1:$NPORT$NGINX_LISTEN_TLS;
        $NGINX_TLS
        location / { default_type application/json; return 200 '{"id":1,"data":"aGVsbG8="}'; }
    }
}
CONF
/usr/sbin/nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" &
NGINX_PID=$!

# --- loom ---
echo "bench-admin-password" > "$WORK/pw"
# shellcheck disable=SC2086 # TLS_FLAGS: two flags and their files, or none
"$LOOM" serve --listen 127.0.0.1:0 --admin-password-file "$WORK/pw" --cpu-slots 8 $TLS_FLAGS > "$WORK/serve.out" 2>&1 &
HOST_PID=$!
for _ in $(seq 1 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.1; done
URL=$(head -n1 "$LOOM_HOME/host")
echo bench-admin-password | "$LOOM" login -u admin --password-stdin >/dev/null
TOKEN=$(awk -v u="$URL" '$1 == u {print $2}' "$LOOM_HOME/credentials")

# wrk_post URL BODYFILE CONNECTIONS: "REQ_PER_S P50_MS P99_MS ERRORS", median of 3 by req/s
cat > "$WORK/post.lua" <<'LUA'
local f = io.open(os.getenv("BODY_FILE")); local body = f:read("*a"); f:close()
wrk.method = "POST"; wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
done = function(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read +
                 summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT %.1f %.3f %.3f %d %d\n", summary.requests / summary.duration * 1e6,
           latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors, summary.requests))
end
LUA
# (the three runs' requests, summed, go to $WORK/requests)
wrk_post() {
    local runs=""
    local threads=2
    [ "$3" -lt 2 ] && threads=1
    for _ in 1 2 3; do
        runs="$runs$(BODY_FILE=$2 TOKEN=$TOKEN wrk -t$threads -c"$3" -d"${secs}s" -s "$WORK/post.lua" "$1" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}')
"
    done
    printf '%s' "$runs" | awk '{n += $5} END {print n}' > "$WORK/requests"
    printf '%s' "$runs" | sort -n | sed -n 2p | cut -d' ' -f1-4
}
# loom_cpu_ticks: CPU time (clock ticks) of the host and the processes under it so far
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
loom_cpu_ticks() {
    local t=0 p
    for p in $HOST_PID $(descendants "$HOST_PID"); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo $t
}

profile() { # profile BATCH MIN MAX [INTERVAL RELEASE]
    printf '{"policy": {"kernel_min": %s, "kernel_max": %s, "task_batch_size": %s, "schedule_interval": %s, "kernel_delay_release_time": %s, "task_execution_timeout": 30}}' \
        "$2" "$3" "$1" "${4:-3}" "${5:-60}" > "$WORK/profile.json"
}

echo '{"id":1,"data":"aGVsbG8="}' > "$WORK/echo.json"
echo '{"inputs":[1.5,2.5,3.5,4.5]}' > "$WORK/ffi.json"
if want echo; then
# nginx and loom take turns (TURNS, default 5), so that a drift in the
# machine's speed falls on both; each turn gives one ratio, and the medians
# are printed.
TURNS=${TURNS:-5}
echo "== echo at 64 connections over $PROTO (wrk -t2 -c64 -d${secs}s), nginx and loom in $TURNS turns on the same 2 cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
profile 32 1 1
for way in so lua ffi; do
    "$LOOM" model deploy -p "$EX/echo-$way" --profile "$WORK/profile.json" >/dev/null
    "$LOOM" model start "echo-$way" --wait 90 >/dev/null
    body=$WORK/echo.json; [ $way = ffi ] && body=$WORK/ffi.json
    ngs="" looms="" ratios="" p99s="" errs=0 ticks=0 requests=0
    for _ in $(seq "$TURNS"); do
        read -r ng _ _ ng_err _ <<< "$(BODY_FILE=$WORK/echo.json TOKEN=$TOKEN wrk -t2 -c64 -d"${secs}s" \
            -s "$WORK/post.lua" "$PROTO://127.0.0.1:$NPORT/" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}')"
        t0=$(loom_cpu_ticks)
        read -r rps _ p99 err n <<< "$(BODY_FILE=$body TOKEN=$TOKEN wrk -t2 -c64 -d"${secs}s" \
            -s "$WORK/post.lua" "$URL/dlim/v1/inference/echo-$way" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}')"
        ticks=$((ticks + $(loom_cpu_ticks) - t0)) requests=$((requests + n)) errs=$((errs + err + ng_err))
        ngs="$ngs $ng" looms="$looms $rps" p99s="$p99s $p99"
        ratios="$ratios $(awk -v a="$rps" -v b="$ng" 'BEGIN {printf "%.3f", a / b}')"
    done
    cpu=$(awk -v t=$ticks -v n=$requests -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", n ? t * 1e6 / hz / n : 0}')
    printf 'echo-%-4s loom %8.0f req/s, nginx %8.0f (medians): %s %% of nginx, turn by turn%s; p99 %s ms; errors %s; %s us CPU/request\n' \
        "$way" "$(echo $looms | median)" "$(echo $ngs | median)" \
        "$(echo $ratios | median | awk '{printf "%.0f", 100 * $1}')" \
        "$(for r in $ratios; do awk -v r="$r" 'BEGIN {printf " %.0f", 100 * r}'; done)" \
        "$(echo $p99s | median)" "$errs" "$cpu"
    "$LOOM" model stop "echo-$way" >/dev/null
    eval "raw_rps_$way=$(echo $looms | median) raw_cpu_$way=$cpu"
done
fi

if want v2; then
# The same echo, a v2 model: the host decodes the request into tensors and
# encodes the kernel's output tensors as the answer.
echo "== v2 echo at 64 connections (wrk -t2 -c64 -d${secs}s, median of 3): an Open Inference Protocol request decoded by the host, on POST /v2/models/NAME/infer"
echo '{"id":"1","inputs":[{"name":"x","shape":[4],"datatype":"FP64","data":[1.5,2.5,3.5,4.5]}]}' > "$WORK/v2.json"
profile 32 1 1
for way in so lua ffi; do
    model=echo-$way-v2; [ $way = ffi ] && model=echo-ffi
    "$LOOM" model deploy -p "$EX/$model" --profile "$WORK/profile.json" >/dev/null 2>&1 || true
    "$LOOM" model start "$model" --wait 90 >/dev/null
    t0=$(loom_cpu_ticks)
    read -r rps _ p99 err <<< "$(wrk_post "$URL/v2/models/$model/infer" "$WORK/v2.json" 64)"
    cpu=$(awk -v t=$(($(loom_cpu_ticks) - t0)) -v n="$(cat "$WORK/requests")" -v hz="$(getconf CLK_TCK)" \
        'BEGIN {printf "%.1f", n ? t * 1e6 / hz / n : 0}')
    eval "raw=\${raw_rps_$way:--} raw_cpu=\${raw_cpu_$way:--}"
    printf '%-11s loom %8.0f req/s, p99 %s ms, errors %s, %s us CPU/request | raw echo-%s: %s req/s, %s us CPU/request\n' \
        "$model" "$rps" "$p99" "$err" "$cpu" "$way" "$raw" "$raw_cpu"
    "$LOOM" model stop "$model" >/dev/null
done
fi

# --- the MLP: trained here for one epoch by `loom demo` (its own host) ---
if want mlp && [ -r /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "== training the MLP for the batching figures (loom demo --epochs 1)"
    "$LOOM" demo --home "$WORK/demo" --epochs 1 > "$WORK/demo.out" 2>&1 || { tail -5 "$WORK/demo.out"; exit 1; }
    trained=$(ls -d "$WORK"/demo/execs/*/model | while read -r d; do [ -f "$d/model.safetensors" ] && echo "$d"; done | head -n1)
    mkdir -p "$WORK/mlp"
    cp "$trained/model.safetensors" "$trained/edt.json" "$WORK/mlp/"
    printf '{"name":"mlp","runtime":"native","weight_path":"model.safetensors","attributes":[{"key":"model_spec","value":"edt.json"}],"mk_environments":[{"name":"OPENBLAS_NUM_THREADS","value":"1"}]}' > "$WORK/mlp/model.json"
    /usr/bin/python3 - "$WORK/image.json" <<'PY'
import gzip, json, sys
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    f.read(16); px = f.read(784)
json.dump({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32",
                       "data": [round(p / 255.0, 4) for p in px]}]}, open(sys.argv[1], "w"))
PY
    echo "== the MLP 784-512-512-10, one instance, one image per request (median of 3)"
    for batch in 1 32; do
        profile $batch 1 1
        "$LOOM" model deploy -p "$WORK/mlp" --profile "$WORK/profile.json" >/dev/null
        "$LOOM" model start mlp --wait 90 >/dev/null
        read -r rps p50 p99 err <<< "$(wrk_post "$URL/dlim/v1/inference/mlp" "$WORK/image.json" 64)"
        read -r lrps lp50 lp99 lerr <<< "$(wrk_post "$URL/dlim/v1/inference/mlp" "$WORK/image.json" 1)"
        printf 'task_batch_size %-3s  64 connections: %8s req/s  p99 %7s ms  errors %s | 1 connection: p50 %6s ms\n' \
            "$batch" "$rps" "$p99" "$err" "$lp50"
        eval "rps_$batch=$rps p50_$batch=$lp50"
        "$LOOM" model undeploy mlp -f >/dev/null
    done
    awk -v a="$rps_32" -v b="$rps_1" -v c="$p50_32" -v d="$p50_1" \
        'BEGIN {printf "batch 32 / batch 1 throughput: %.2fx; p50 at low load: %+.3f ms\n", a / b, c - d}'
fi

# --- autoscaling: a kernel taking 50 ms per request, min 1, max 4 ---
want scale || exit 0
echo "== autoscaling: kernel_min 1, kernel_max 4, schedule_interval 1 s, kernel_delay_release_time 3 s;"
echo "   8 connections for 8 s against a kernel taking 50 ms a request, then none"
cp -r "$build/tests/integration/infer/fault" "$WORK/slow"
sed -i 's/"name": "fault"/"name": "slow"/' "$WORK/slow/model.json"
profile 1 1 4 1 3
"$LOOM" model deploy -p "$WORK/slow" --profile "$WORK/profile.json" >/dev/null
"$LOOM" model start slow --wait 90 >/dev/null
echo '{"sleep":1}' > "$WORK/sleep.json"
start=$(date +%s.%N)
( BODY_FILE=$WORK/sleep.json TOKEN=$TOKEN wrk -t2 -c8 -d8s -s "$WORK/post.lua" "$URL/dlim/v1/inference/slow" > "$WORK/step.out" ) &
step=$!
for _ in $(seq 1 40); do
    view=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/dlim/v1/model/slow")
    printf 't=%5.1f s  instances %s\n' "$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN {print n - s}')" \
        "$(printf '%s' "$view" | /usr/bin/python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["kernels"]["running"], "queued", v["requests"]["queued"])')"
    sleep 0.5
done
wait $step
awk '/^RESULT/ {printf "step load: %s req/s, errors (lost or failed requests) %s\n", $2, $5}' "$WORK/step.out"
curl -s -H "Authorization: Bearer $TOKEN" "$URL/dlim/v1/model/slow" | /usr/bin/python3 -c \
    'import json,sys; v=json.load(sys.stdin)["requests"]; print("served", int(v["served"]), "failed", int(v["failed"]))'

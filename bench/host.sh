# bench/host.sh - sourced by benchmarks that need a loom host of their own.
# bench_start_host LOOM WORK [SERVE_ARGS...]: starts `LOOM serve` on a free
# loopback port with its home in WORK/home (exported as LOOM_HOME), waits
# until it listens, and logs the CLI in as its administrator. Sets HOST_PID;
# the caller's EXIT trap stops it. The host's output goes to WORK/serve.out.
bench_start_host() {
    local loom=$1 work=$2
    shift 2
    export LOOM_HOME="$work/home"
    echo "bench-password" > "$work/pw"
    "$loom" serve --listen 127.0.0.1:0 --admin-password-file "$work/pw" "$@" > "$work/serve.out" 2>&1 &
    HOST_PID=$!
    for _ in $(seq 1 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.05; done
    sleep 0.2
    echo bench-password | "$loom" login -u admin --password-stdin > /dev/null
}

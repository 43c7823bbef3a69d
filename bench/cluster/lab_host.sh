# bench/cluster/lab_host.sh - sourced by the cluster benches: a Slurm lab of
# 2 nodes (tests/cluster/lab.sh, LOOM_LAB_CPUS CPU slots each) with loom
# installed where both nodes see it and a host on node1 (`loom serve --slurm
# debug --shared-dir ... --worker-link tcp:ADDR --data-root $data`), the CLI
# logged on as admin. Set before sourcing: root, build, data, loom,
# LOOM_LAB_NAME, LOOM_LAB_DIR, LOOM_LAB_NET, LOOM_LAB_CPUS; `bench` (the
# script's name, for messages). Sets lab, shared, node1, LOOM_HOME, host_pid;
# the lab is taken down on exit.
lab=$root/tests/cluster/lab.sh
if ! why=$("$lab" check); then
    echo "$bench: skipped: $why"
    exit 0
fi
case "$("$loom" serve --help)" in *"--slurm PARTITION"*) ;; *) false ;; esac ||
    { echo "$bench: this loom was built without libslurm (libslurm-dev)" >&2; exit 1; }
[ -f "$data/train-images-idx3-ubyte.gz" ] ||
    { echo "$bench: Fashion-MNIST is missing: apt-get install -y dataset-fashion-mnist" >&2; exit 1; }

"$lab" up 2 >&2
host_pid=
lab_host_down() {
    [ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null
    "$lab" down >&2
}
trap lab_host_down EXIT
eval "$("$lab" env)"
shared=$LOOM_LAB_SHARED
chmod 0711 "$LOOM_LAB_DIR" "$shared"
mkdir -p "$shared/loom/bin" "$shared/loom/lib/loom" "$shared/files" "$shared/model"
cp "$loom" "$shared/loom/bin/loom"
cp -r "$build/lib/loom/plugins" "$shared/loom/lib/loom/plugins"
node1=$LOOM_LAB_NET.11
export LOOM_HOME=$LOOM_LAB_DIR/home
rm -rf "$LOOM_HOME" "$shared/files"/* # a fresh host each invocation
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$LOOM_LAB_DIR/admin.pw"
echo >>"$LOOM_LAB_DIR/admin.pw"
"$lab" exec node1 env LOOM_HOME="$LOOM_HOME" "$shared/loom/bin/loom" serve \
    --listen "$node1:0" --admin-password-file "$LOOM_LAB_DIR/admin.pw" --slurm debug \
    --allow-basic-over-http --shared-dir "$shared/files" --worker-link "tcp:$node1" \
    --data-root "$data" \
    >"$LOOM_LAB_DIR/serve.out" 2>&1 &
host_pid=$!
for _ in $(seq 600); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.1; done
[ -s "$LOOM_HOME/host" ] || { echo "$bench: the host did not start: $(cat "$LOOM_LAB_DIR/serve.out")" >&2; exit 1; }
"$loom" login -u admin --password-stdin <"$LOOM_LAB_DIR/admin.pw" >/dev/null
# driver_log ID: an exec's driver log (the trainer writes it as it goes)
driver_log() { cat "$shared/files/execs/$1/log/driver/stdout" 2>/dev/null || true; }

#!/usr/bin/env bash
# What a job's processes start with. The privileged confinement step runs
# nothing of the job's: a model directory ships a library that records the
# euid of every process that loads it, and the job names it in
# --msd-env LD_PRELOAD and LD_AUDIT; the job's own programs load it (their
# right), but no process ever runs it as root. The job's environment is
# the documented one, never the host's: a variable set only on `loom
# serve`, the host's HOME and a PATH whose first python3 is a shim stay
# out. The Python a launch job runs is the first python3 on that PATH, and
# `exec view` names it. WMLA flags accepted with a warning keep the
# warning with the exec, after a restart too. An administrator sets the
# jobs' PATH with --job-path.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

JOB_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# ---- the library: its constructor writes euid.TAG.PID.EUID in the job's
# working directory (a process keeps its pid across execve, so the euid is
# in the name too; an audit library also needs la_version)
MODEL="$WORK/model"
mkdir -p "$MODEL"
cat > "$WORK/record.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
unsigned int la_version(unsigned int v) { return v; }
__attribute__((constructor)) static void record(void)
{
    char name[64], text[32];
    snprintf(name, sizeof name, "euid.%s.%d.%d", TAG, (int)getpid(), (int)geteuid());
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) {
        int n = snprintf(text, sizeof text, "%d\n", (int)geteuid());
        if (write(fd, text, (size_t)n) != n)
            _exit(99);
        close(fd);
    }
}
C
for tag in preload audit; do
    cc -shared -fPIC -DTAG="\"$tag\"" -o "$MODEL/$tag.so" "$WORK/record.c" || { echo "cannot build the library" >&2; exit 1; }
done
cat > "$MODEL/show_env.sh" <<'SH'
#!/bin/sh
echo "home is $HOME"
env | sort > "$RESULT_DIR/env.txt"
echo done
SH
chmod +x "$MODEL/show_env.sh"
cat > "$MODEL/which.py" <<'PY'
import sys
print("executable", sys.executable)
PY

# A python3 first on the host's PATH that is not the job's (a pyenv shim).
mkdir -p "$WORK/shim"
printf '#!/bin/sh\necho shim ran >&2\nexit 3\n' > "$WORK/shim/python3"
chmod +x "$WORK/shim/python3"

chmod 0711 "$WORK"
export FOO_ONLY_ON_SERVE=1
HOME=/root PATH="$WORK/shim:$PATH" start_host
unset FOO_ONLY_ON_SERVE

submit() { # submit ARGS...: prints the exec id
    "$LOOM" exec start "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
id=$(submit --exec-start command --model-dir "$MODEL" --model-main show_env.sh \
     --msd-env LD_PRELOAD=./preload.so --msd-env LD_AUDIT=./audit.so --msd-env MY_PAIR=hello)
expect_ok "the job ends" "$LOOM" exec wait "$id" --timeout 60
expect_eq "the job finished" "$("$LOOM" --json exec view "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" FINISHED
EXEC_DIR="$LOOM_HOME/execs/$id"
env_txt=$(cat "$EXEC_DIR/env.txt" 2>/dev/null)

# ---- no process ran the job's libraries as root
records=$(find "$EXEC_DIR" -name 'euid.*' | wc -l)
expect_ok "the job's programs loaded the preloaded library" test -n "$(find "$EXEC_DIR" -name 'euid.preload.*')"
expect_ok "and the audit library" test -n "$(find "$EXEC_DIR" -name 'euid.audit.*')"
root_runs=$(find "$EXEC_DIR" -name 'euid.*' -exec cat {} + | grep -cx 0)
expect_eq "no process ran them as root (of $records records)" "$root_runs" "0"
if [ "$(id -u)" = 0 ]; then
    expect_eq "every record is the job's account" \
        "$(find "$EXEC_DIR" -name 'euid.*' -exec cat {} + | sort -u | grep -c '^2[0-9][0-9][0-9][0-9][0-9]$')" \
        "$(find "$EXEC_DIR" -name 'euid.*' -exec cat {} + | sort -u | wc -l)"
else
    echo "NOT TESTED: the host as root (the euid checks hold trivially)" >&2
fi
expect_eq "no record is root-owned" \
    "$(find "$EXEC_DIR" -name 'euid.*' -user 0 | wc -l)" "0"

# ---- the environment is the documented one
expect_contains "the job sees its LD_PRELOAD" "$env_txt" "LD_PRELOAD=./preload.so"
expect_contains "--msd-env pairs" "$env_txt" "MY_PAIR=hello"
expect_not_contains "a variable set only on loom serve" "$env_txt" "FOO_ONLY_ON_SERVE"
expect_contains "PATH is the documented one" "$env_txt" "$(printf '\nPATH=%s\n' "$JOB_PATH")"
expect_contains "HOME is the exec folder" "$env_txt" "HOME=$EXEC_DIR"
expect_not_contains "HOME is not the host's" "$env_txt" "HOME=/root"
expect_contains "LANG" "$env_txt" "LANG=C.UTF-8"
expect_contains "the exec's folders" "$env_txt" "RESULT_DIR=$EXEC_DIR"
expect_contains "WMLA's variables" "$env_txt" "DLI_EXECID=$id"

# ---- which Python: the first python3 on the job's PATH, not the host's shim
want=$(PATH=$JOB_PATH command -v python3)
if [ -n "$want" ]; then
    id=$(submit --exec-start python --model-dir "$MODEL" --model-main which.py)
    expect_ok "the python job ends" "$LOOM" exec wait "$id" --timeout 60
    expect_contains "it ran the job PATH's python3" "$("$LOOM" exec logs "$id")" "executable $want"
    expect_contains "exec view names it" "$("$LOOM" exec view "$id")" "python3 on PATH ($want)"
else
    echo "NOT TESTED: no python3 on $JOB_PATH" >&2
fi

# ---- a deployed model's kernel process: the same clean environment (an
# ffi kernel answers 1 or 0 for each check)
KMODEL="$WORK/envprobe"
mkdir -p "$KMODEL"
cat > "$WORK/probe.c" <<C
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static double is(const char *name, const char *want)
{
    const char *v = getenv(name);
    return want ? (v && strcmp(v, want) == 0) : v != NULL;
}
int32_t probe(const double *x, int64_t n, double *y)
{
    (void)x;
    if (n < 3)
        return 1;
    y[0] = is("FOO_ONLY_ON_SERVE", NULL);
    y[1] = is("HOME", "/root");
    y[2] = is("PATH", "$JOB_PATH");
    return 0;
}
C
cc -shared -fPIC -o "$KMODEL/libprobe.so" "$WORK/probe.c" || { echo "cannot build the probe" >&2; exit 1; }
cat > "$KMODEL/model.json" <<'JSON'
{"name": "envprobe", "tag": "v1", "runtime": "ffi", "schema_version": "1",
 "ffi": {"library": "libprobe.so", "symbol": "probe",
         "signature": "int32(ptr f64 in x, i64 n, ptr f64 out y)", "output_size": "n"}}
JSON
expect_ok "deploy the probe" "$LOOM" model deploy -p "$KMODEL"
expect_ok "start the probe" "$LOOM" model start envprobe --wait 90
expect_contains "the kernel: no host variable, not the host's HOME, the job PATH" \
    "$("$LOOM" model infer envprobe -d '{"inputs":[0,0,0]}' 2>&1)" '"data":[0,0,1]'
"$LOOM" model stop envprobe >/dev/null 2>&1

# ---- warnings stay with the exec, after a restart too
id=$(submit --exec-start command --model-dir "$MODEL" --model-main show_env.sh \
     --python-version 3.6 --gpuPerWorker 0)
expect_ok "the warned job ends" "$LOOM" exec wait "$id" --timeout 60
view=$("$LOOM" exec view "$id")
expect_contains "exec view shows the warning" "$view" "warning     --python-version 3.6:"
# A WMLA client's sigName naming no plan: the route's warning is kept too.
tar -C "$MODEL" -cf "$WORK/model.tar" .
sid=$(curl -s -H "Authorization: Bearer $TOKEN" -X POST \
      "$URL/platform/rest/deeplearning/v1/execs?sigName=no-such-plan" \
      -F "args=--exec-start command --model-dir m --model-main show_env.sh --conda-env-name dlipy3" \
      -F "file=@$WORK/model.tar" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id",""))')
sview=$("$LOOM" exec view "$sid")
expect_contains "sigName's warning is kept" "$sview" "warning     sigName no-such-plan: no resource plan"
expect_contains "with the parser's after it" "$sview" "warning     --conda-env-name dlipy3:"
expect_ok "the sigName job ends" "$LOOM" exec wait "$sid" --timeout 60
stop_host
start_host --job-path /opt/site/bin:/usr/bin:/bin
expect_contains "after a restart too" "$("$LOOM" exec view "$id")" "warning     --python-version 3.6:"
expect_contains "and in --json" "$("$LOOM" --json exec view "$id")" '"warnings":["--python-version 3.6:'
expect_eq "a CPU worker" "$("$LOOM" --json exec view "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" FINISHED

# ---- an administrator's PATH for jobs (loom serve --job-path)
id=$(submit --exec-start command --model-dir "$MODEL" --model-main show_env.sh)
expect_ok "the job under --job-path ends" "$LOOM" exec wait "$id" --timeout 60
expect_contains "it starts with the administrator's PATH" \
    "$(cat "$LOOM_HOME/execs/$id/env.txt" 2>/dev/null)" "$(printf '\nPATH=/opt/site/bin:/usr/bin:/bin\n')"
stop_host
expect_fails "a relative --job-path is refused" timeout 20 "$LOOM" serve --listen 127.0.0.1:0 --job-path bin:/usr/bin
expect_contains "naming the flag" "$(cat "$WORK/out")" "--job-path: expected absolute folders"
finish

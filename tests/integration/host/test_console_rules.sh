#!/usr/bin/env bash
# The web console's rules without a browser: its files served at / and
# /console/ with the security headers and confined to their folder (no
# "..", no hidden files, no link out); Chart.js from Debian's package; the
# cookie session (HttpOnly, SameSite=Strict), its CSRF token on every
# state-changing call, its refusal from other origins and without CORS
# headers, log-off; Bearer callers unchanged.
LOOM=$1
SRC=$3
. "$(dirname "$0")/../lib.sh"

# The console's files, with a link out planted beside them.
cp -r "$SRC/web" "$WORK/web"
ln -s /etc/hostname "$WORK/web/linked.txt"
ln -s "$SRC/web" "$WORK/web/linkdir"
start_host --web-dir "$WORK/web" --cors-origin http://notebooks.example
CSP="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

get() { # get PATH [curl args]: prints the status; headers in $WORK/h, body in $WORK/b
    local path=$1; shift
    curl -s --path-as-is -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' "$URL$path" "$@"
}
header() { # header NAME: its value in the last reply
    awk -v n="$1" 'BEGIN{IGNORECASE=1} tolower($0) ~ "^" tolower(n) ":" {sub(/^[^:]*: */, ""); sub(/\r$/, ""); print}' "$WORK/h"
}

# ---- the files and their headers
expect_eq "GET / serves the console" "$(get /)" "200"
expect_eq "its type" "$(header Content-Type)" "text/html; charset=utf-8"
expect_eq "its Content-Security-Policy" "$(header Content-Security-Policy)" "$CSP"
expect_eq "nosniff" "$(header X-Content-Type-Options)" "nosniff"
expect_eq "no referrer" "$(header Referrer-Policy)" "no-referrer"
expect_contains "the page itself" "$(cat "$WORK/b")" '<script type="module" src="/console/app.js">'
expect_not_contains "no inline script or style in the page" "$(cat "$WORK/b")" "<style"
expect_eq "GET /console/ is the same page" "$(get /console/)" "200"
expect_eq "a module" "$(get /console/pages/execs.js)" "200"
expect_eq "a module's type" "$(header Content-Type)" "text/javascript; charset=utf-8"
expect_eq "its CSP too" "$(header Content-Security-Policy)" "$CSP"
expect_eq "the stylesheet" "$(get /console/style.css)" "200"
expect_eq "the stylesheet's type" "$(header Content-Type)" "text/css; charset=utf-8"
for bad in /console/../README.md /console/pages/../../README.md /console/%2e%2e/README.md \
           /console/.hidden.js /console/pages/.x.js /console//app.js /console/missing.js \
           /console/linked.txt /console/linkdir/app.js /console/index /console/pages/; do
    expect_eq "refused: $bad" "$(get "$bad")" "404"
    expect_not_contains "nothing of the file: $bad" "$(cat "$WORK/b")" "$(head -c 20 /etc/hostname)"
done
if [ -f /usr/share/javascript/chart.js/chart.min.js ]; then
    expect_eq "Chart.js from libjs-chart.js" "$(get /console/vendor/chart.js)" "200"
    expect_eq "Chart.js's size" "$(stat -c %s "$WORK/b")" "$(stat -c %s /usr/share/javascript/chart.js/chart.min.js)"
else
    expect_eq "Chart.js absent" "$(get /console/vendor/chart.js)" "404"
    expect_contains "it names the package" "$(cat "$WORK/b")" "libjs-chart.js"
fi

# ---- log-on: a cookie and a CSRF token
expect_eq "a wrong password" "$(get /console/logon -X POST -H 'Content-Type: application/json' \
    -d '{"user":"admin","password":"wrong-password"}')" "401"
expect_eq "no cookie for it" "$(header Set-Cookie)" ""
expect_eq "log-on" "$(get /console/logon -X POST -H 'Content-Type: application/json' \
    -d "{\"user\":\"admin\",\"password\":\"$ADMIN_PASSWORD\"}")" "200"
COOKIE_LINE=$(header Set-Cookie)
expect_contains "the cookie" "$COOKIE_LINE" "loom_session=loomt_"
for attr in "HttpOnly" "SameSite=Strict" "Path=/" "Max-Age="; do
    expect_contains "the cookie is $attr" "$COOKIE_LINE" "$attr"
done
expect_not_contains "not Secure over plain HTTP" "$COOKIE_LINE" "Secure"
expect_eq "log-on's CSP" "$(header Content-Security-Policy)" "$CSP"
SESSION=$(printf '%s' "$COOKIE_LINE" | sed 's/^loom_session=\([^;]*\);.*/\1/')
CSRF=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrfToken"])' "$WORK/b")
expect_eq "a CSRF token of 64 hex digits" "$(printf '%s' "$CSRF" | grep -cE '^[0-9a-f]{64}$')" "1"
expect_eq "a form log-on" "$(get /console/logon -X POST --data-urlencode user=admin \
    --data-urlencode "password=$ADMIN_PASSWORD")" "200"
expect_contains "its cookie" "$(header Set-Cookie)" "loom_session=loomt_"
expect_ok "a user whose password needs escaping in a form" "$LOOM" user add carol -p 'c@rol pass+%&=x'
expect_eq "a form log-on, escaped" "$(get /console/logon -X POST --data-urlencode user=carol \
    --data-urlencode 'password=c@rol pass+%&=x')" "200"
expect_contains "as carol" "$(cat "$WORK/b")" '"user":"carol"'
expect_eq "a malformed escape" "$(get /console/logon -X POST -d 'user=carol&password=c%4')" "400"

C=(-H "Cookie: loom_session=$SESSION")
expect_eq "the cookie authenticates a read" "$(get /platform/rest/deeplearning/v1/execs "${C[@]}")" "200"
expect_eq "GET /console/session" "$(get /console/session "${C[@]}")" "200"
expect_contains "the same CSRF token" "$(cat "$WORK/b")" "\"csrfToken\":\"$CSRF\""

# ---- CSRF: a state-changing call with the cookie needs the token
expect_eq "POST with the cookie, no CSRF token" "$(get /auth/v1/apikeys -X POST "${C[@]}" \
    -H 'Content-Type: application/json' -d '{"label":"k1"}')" "403"
expect_contains "the refusal names the header" "$(cat "$WORK/b")" "X-CSRF-Token"
# The token with its last digit changed (to 1 where it was 0: the token is
# random hex, and ending in 0 one time in 16 it stayed right).
case $CSRF in *0) WRONG=${CSRF%?}1 ;; *) WRONG=${CSRF%?}0 ;; esac
expect_eq "DELETE with the cookie, a wrong token" "$(get /platform/rest/deeplearning/v1/execs/x -X DELETE \
    "${C[@]}" -H "X-CSRF-Token: $WRONG")" "403"
expect_contains "it does not match" "$(cat "$WORK/b")" "does not match"
expect_eq "another session's token" "$(get /auth/v1/apikeys -X POST "${C[@]}" \
    -H "X-CSRF-Token: $(printf '0%.0s' $(seq 64))" -H 'Content-Type: application/json' -d '{"label":"k1"}')" "403"
expect_eq "POST with the cookie and the token" "$(get /auth/v1/apikeys -X POST "${C[@]}" \
    -H "X-CSRF-Token: $CSRF" -H 'Content-Type: application/json' -d '{"label":"k1"}')" "201"
expect_eq "a Bearer caller needs no CSRF token" "$(get /auth/v1/apikeys -X POST \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"label":"k2"}')" "201"

expect_eq "an inference call (the lane) with the cookie, no CSRF token" "$(get /dlim/v1/inference/nope -X POST \
    "${C[@]}" -H 'Content-Type: application/json' -d '{}')" "403"
expect_contains "the lane names the header too" "$(cat "$WORK/b")" "X-CSRF-Token"

# ---- origins: the cookie only from the host's own pages, never with CORS
expect_eq "the cookie from another origin" "$(get /platform/rest/deeplearning/v1/execs "${C[@]}" \
    -H 'Origin: http://notebooks.example')" "403"
expect_contains "the refusal names the origin" "$(cat "$WORK/b")" "notebooks.example"
expect_eq "no CORS header for a cookie request" "$(header Access-Control-Allow-Credentials)$(header Access-Control-Allow-Origin)" ""
expect_eq "the cookie from the host's own origin" "$(get /platform/rest/deeplearning/v1/execs "${C[@]}" \
    -H "Origin: $URL")" "200"
expect_eq "a Bearer caller from a listed origin" "$(get /platform/rest/deeplearning/v1/execs \
    -H "Authorization: Bearer $TOKEN" -H 'Origin: http://notebooks.example')" "200"
expect_eq "it keeps its CORS credentials" "$(header Access-Control-Allow-Credentials)" "true"

# ---- log-off
expect_eq "log-off without the token" "$(get /console/logout -X POST "${C[@]}")" "403"
expect_eq "log-off" "$(get /console/logout -X POST "${C[@]}" -H "X-CSRF-Token: $CSRF")" "200"
expect_contains "the cookie is cleared" "$(header Set-Cookie)" "Max-Age=0"
expect_eq "the session is over" "$(get /platform/rest/deeplearning/v1/execs "${C[@]}")" "401"

# ---- the log-on limits hold for the console's log-on
for i in 1 2 3 4 5 6; do
    code=$(get /console/logon -X POST -H 'Content-Type: application/json' -d '{"user":"admin","password":"wrong-again"}')
done
expect_eq "failed console log-ons are rate limited" "$code" "429"

stop_host

# ---- over HTTPS: the cookie is Secure, and the host's own origin is https
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
export LOOM_CA_CERT="$WORK/cert.pem"
start_host --web-dir "$WORK/web" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
T=(--cacert "$WORK/cert.pem")
expect_eq "log-on over HTTPS" "$(get /console/logon "${T[@]}" -X POST -H 'Content-Type: application/json' \
    -d "{\"user\":\"admin\",\"password\":\"$ADMIN_PASSWORD\"}")" "200"
expect_contains "the cookie is Secure" "$(header Set-Cookie)" "; Secure"
SESSION=$(header Set-Cookie | sed 's/^loom_session=\([^;]*\);.*/\1/')
expect_eq "its own https origin" "$(get /platform/rest/deeplearning/v1/execs "${T[@]}" \
    -H "Cookie: loom_session=$SESSION" -H "Origin: $URL")" "200"
expect_eq "the same host over http is another origin" "$(get /platform/rest/deeplearning/v1/execs "${T[@]}" \
    -H "Cookie: loom_session=$SESSION" -H "Origin: http://${URL#https://}")" "403"
stop_host
finish

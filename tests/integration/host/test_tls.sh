#!/usr/bin/env bash
# HTTPS: the host serves TLS with its certificate and key; the CLI trusts
# that certificate through LOOM_CA_CERT and works as over HTTP; a client
# that does not trust it, or speaks plain HTTP, gets nothing.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
expect_ok "a certificate for the test" test -s "$WORK/cert.pem"
export LOOM_CA_CERT="$WORK/cert.pem"
start_host --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
expect_contains "the host says https" "$URL" "https://127.0.0.1:"
expect_contains "the CLI works over TLS" "$("$LOOM" plugin list)" "command"
expect_contains "a trusted client gets the API" \
    "$(curl -s --cacert "$WORK/cert.pem" -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/health")" '"status":"ok"'
expect_fails "an untrusting client is refused" curl -sf "$URL/loom/v1/health"
expect_fails "plain HTTP to the TLS port gets nothing" curl -sf "http://${URL#https://}/loom/v1/health"
stop_host TERM
expect_fails "a key without a certificate" "$LOOM" serve --listen 127.0.0.1:0 --tls-key "$WORK/key.pem"
expect_contains "says they go together" "$(cat "$WORK/out")" "go together"
finish

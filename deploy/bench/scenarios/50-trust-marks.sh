# shellcheck shell=bash
# Trust Mark Issuer: the trust_mark endpoint for an entitled subject (the issued JWT cached for
# the spec's cache_ttl) and status checks (POST, a signed answer each time, so the responder is
# the only reference: nginx does not answer a POST from a static file).
TMI=17750
TMI_URL=http://127.0.0.1:$TMI
TYPE=https://marks.example.org/member
LEAF=https://leaf.example.org
pharos_start tmi $TMI
admin $TMI POST /federation-endpoints '{"type":"trust_mark","path":"/trust-mark"}'
admin $TMI POST /federation-endpoints '{"type":"trust_mark_status","path":"/trust-mark-status"}'
admin $TMI POST /trust-marks/issuance-spec \
    "{\"trust_mark_type\":\"$TYPE\",\"lifetime\":\"24h\",\"cache_ttl\":\"1h\"}"
ENC_TYPE=$(py "import urllib.parse as u; print(u.quote('$TYPE', safe=''))")
admin $TMI POST "/trust-marks/issuance-spec/$ENC_TYPE/subjects" "{\"entity_id\":\"$LEAF\"}"
Q=$(py "import urllib.parse as u; print(u.urlencode({'sub': '$LEAF', 'trust_mark_type': '$TYPE'}))")
curl -fsS -D "$WORK/tm.headers" "$TMI_URL/trust-mark?$Q" >"$WORK/tm.jwt"
grep -qi '^content-type: application/trust-mark+jwt' "$WORK/tm.headers" || die "trust mark content type"
ref_add tm "$WORK/tm.jwt" application/trust-mark+jwt
compare "trust_mark, entitled subject (cached for cache_ttl), req/s ($(wc -c <"$WORK/tm.jwt") bytes)" \
    "$TMI_URL/trust-mark?$Q" tm

BODY="trust_mark=$(cat "$WORK/tm.jwt")"
curl -fsS -D "$WORK/tms.headers" -X POST --data "$BODY" "$TMI_URL/trust-mark-status" >"$WORK/tms.jwt"
grep -qi '^content-type: application/trust-mark-status-response+jwt' "$WORK/tms.headers" \
    || die "trust mark status content type"
ref_add tms "$WORK/tms.jwt" application/trust-mark-status-response+jwt
cat >"$WORK/status.lua" <<LUA
wrk.method = "POST"
wrk.body = "$BODY"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
LUA
compare_responder "trust_mark_status, POST, signed answer (ES256), req/s" \
    "$TMI_URL/trust-mark-status" tms "$WORK/status.lua"
pharos_stop tmi

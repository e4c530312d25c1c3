# shellcheck shell=bash
# Resolve: a 3-level federation on loopback, trust anchor -> intermediate -> leaf, three Pharos
# processes. Warm: one resolver answering from its caches, throughput vs the references. Cold: a
# freshly started resolver (empty caches, every statement fetched and verified) per sample;
# median and p99 of the first request.
TA=17721 IM=17722 LEAF=17723 R=17724

jwks_of() { # PORT -> the jwks of its Entity Configuration
    curl -fsS "http://127.0.0.1:$1/.well-known/openid-federation" | py '
import sys, json, base64
p = sys.stdin.read().split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jwks"]))'
}
log "resolve: federation :$TA -> :$IM -> :$LEAF"
pharos_start ta $TA; pharos_start im $IM; pharos_start leaf $LEAF
for p in $TA $IM; do admin $p POST /federation-endpoints '{"type":"fetch","path":"/fetch"}'; done
admin $LEAF PUT /entity-configuration/metadata/openid_relying_party \
    '{"client_name":"leaf","client_registration_types":["automatic"]}'
admin $TA POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$IM\",\"jwks\":$(jwks_of $IM)}"
admin $IM POST /entity-configuration/authority-hints "{\"entity_id\":\"http://127.0.0.1:$TA\"}"
admin $IM POST /subordinates "{\"entity_id\":\"http://127.0.0.1:$LEAF\",\"jwks\":$(jwks_of $LEAF)}"
admin $LEAF POST /entity-configuration/authority-hints "{\"entity_id\":\"http://127.0.0.1:$IM\"}"
admin $TA PUT "/subordinates/http%3A%2F%2F127.0.0.1%3A$IM/metadata-policies" \
    '{"openid_relying_party":{"contacts":{"add":["fed@ta.example"]}}}'
QUERY="/resolve?sub=http%3A%2F%2F127.0.0.1%3A$LEAF&trust_anchor=http%3A%2F%2F127.0.0.1%3A$TA"
# The resolver admits the one anchor it is configured for (an unknown anchor is refused
# without a fetch since issue 31); its keys are not pinned, so a cold resolve fetches them.
RESOLVE_ENDPOINT="{\"type\":\"resolve\",\"path\":\"/resolve\",\"config\":{\"allowed_trust_anchors\":[\"http://127.0.0.1:$TA\"]}}"

RSAMPLES=${BENCH_RESOLVE_SAMPLES:-50}
# The resolver fetches from loopback: it says so (the default refuses private addresses).
resolver_config() {
    pharos_config r $R
    printf 'federation:\n  block_private_addresses: false\n' >>"$WORK/r/config.yaml"
}
log "resolve cold: $RSAMPLES fresh resolver processes"
: >"$WORK/cold.txt"
for _ in $(seq 1 "$RSAMPLES"); do
    rm -rf "$WORK/r"
    resolver_config
    pharos_start r $R
    admin $R POST /federation-endpoints "$RESOLVE_ENDPOINT"
    curl -fsS -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$R$QUERY" >>"$WORK/cold.txt" ||
        die "cold resolve failed: $(curl -sS "http://127.0.0.1:$R$QUERY")"
    pharos_stop r
done
row "| cold 3-level resolve on loopback (n=$RSAMPLES fresh resolvers) | median $(pct 50 "$WORK/cold.txt" 1000) ms, p99 $(pct 99 "$WORK/cold.txt" 1000) ms | | | | |"

rm -rf "$WORK/r"
resolver_config
pharos_start r $R
admin $R POST /federation-endpoints "$RESOLVE_ENDPOINT"
curl -fsS -D "$WORK/resolve.headers" "http://127.0.0.1:$R$QUERY" >"$WORK/resolve.jwt"
grep -qi '^content-type: application/resolve-response+jwt' "$WORK/resolve.headers" || die "resolve type"
ref_add resolve "$WORK/resolve.jwt" application/resolve-response+jwt
compare "warm resolve, req/s ($(wc -c <"$WORK/resolve.jwt") bytes)" "http://127.0.0.1:$R$QUERY" resolve
p99_at_half "warm resolve" "http://127.0.0.1:$R$QUERY" resolve
for n in ta im leaf r; do pharos_stop $n; done

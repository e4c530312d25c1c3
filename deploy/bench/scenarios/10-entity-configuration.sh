# shellcheck shell=bash
# Idle memory, then the Entity Configuration: throughput vs the references, p99 at half load.
MAIN=17710
MAIN_URL=http://127.0.0.1:$MAIN
pharos_start main $MAIN
sleep 1
row "| RSS idle (fresh start, no subordinates) | $(rss_mb main) MB | | | | |"
curl -fsS -D "$WORK/ec.headers" "$MAIN_URL/.well-known/openid-federation" >"$WORK/ec.jwt"
grep -qi '^content-type: application/entity-statement+jwt' "$WORK/ec.headers" || die "EC content type"
ref_add ec "$WORK/ec.jwt" application/entity-statement+jwt
compare "Entity Configuration, req/s ($(wc -c <"$WORK/ec.jwt") bytes)" \
    "$MAIN_URL/.well-known/openid-federation" ec
p99_at_half "Entity Configuration" "$MAIN_URL/.well-known/openid-federation" ec

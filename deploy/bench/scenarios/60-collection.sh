# shellcheck shell=bash
# Entity collection: a generated federation of N leaves (default 10,000) under one Pharos
# anchor. The leaves' self-signed Entity Configurations (ES256, UI metadata in two languages)
# are static files served by an nginx of their own; the anchor lists them as subordinates
# (bulk-loaded into SQLite). Measured: the time from enabling the periodic collector to the
# first answer (the whole walk, each Entity Configuration fetched and its signature checked,
# then committed and published), and the endpoint's throughput from the periodic cache (a
# filtered page of 100) as a ratio to the references serving the same bytes.
COL=17740 MEMBERS=17741
N=${BENCH_COLLECTION_ENTITIES:-10000}
MEMBERS_URL=http://127.0.0.1:$MEMBERS

log "collection: generating and signing $N leaf Entity Configurations"
mkdir -p "$WORK/members"
chmod 755 "$WORK" "$WORK/members"
pharos_config col $COL
cat >>"$WORK/col/config.yaml" <<YAML
federation:
  block_private_addresses: false
YAML
pharos_start col $COL
for ep in fetch list; do
    admin $COL POST /federation-endpoints "{\"type\":\"$ep\",\"path\":\"/$ep\"}"
done
pharos_stop col
python3 - "$WORK/members" "$WORK/col-load.sql" "$N" "$MEMBERS_URL" <<'PY'
import base64, json, os, sys, time
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
root, sql, n, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = ec.generate_private_key(ec.SECP256R1())
pub = key.public_key().public_numbers()
jwk = {"kty": "EC", "crv": "P-256", "kid": "m1", "alg": "ES256",
       "x": b64(pub.x.to_bytes(32, "big")), "y": b64(pub.y.to_bytes(32, "big"))}
header = b64(json.dumps({"alg": "ES256", "kid": "m1", "typ": "entity-statement+jwt"}).encode())
now = int(time.time())
jwks = json.dumps({"keys": [jwk]}).replace("'", "''")
with open(sql, "w") as f:
    f.write("BEGIN;\n")
    for i in range(1, n + 1):
        eid = f"{base}/e{i:05d}"
        kind = "openid_provider" if i % 2 else "openid_relying_party"
        claims = {"iss": eid, "sub": eid, "iat": now, "exp": now + 86400, "jwks": {"keys": [jwk]},
                  "metadata": {kind: {"display_name": f"Service {i}", "display_name#it": f"Servizio {i}",
                                      "logo_uri": f"{eid}/logo.png"},
                               "federation_entity": {"organization_name": f"Org {i % 97}"}}}
        signing_input = header + "." + b64(json.dumps(claims).encode())
        r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        jws = signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
        d = os.path.join(root, f"e{i:05d}", ".well-known")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "openid-federation"), "w") as out:
            out.write(jws)
        f.write("INSERT INTO subordinates (id, entity, entity_id, description, status, jwks, created_at, "
                f"updated_at) VALUES ({i}, 1, '{eid}', '', 'active', '{jwks}', {now}, {now});\n")
    f.write("COMMIT;\n")
PY
chmod -R a+rX "$WORK/members"
sqlite3 "$WORK/col/data/pharos.db" <"$WORK/col-load.sql"
cat >"$WORK/members.conf" <<EOF
worker_processes auto;
pid $WORK/members.pid;
error_log $WORK/members.err;
events { worker_connections 4096; }
http {
    access_log off;
    default_type application/entity-statement+jwt;
    server { listen 127.0.0.1:$MEMBERS; root $WORK/members; }
}
EOF
nginx -c "$WORK/members.conf" -g 'daemon off;' &
MEMBERS_PID=$!
for _ in $(seq 1 100); do
    curl -fs -o /dev/null "$MEMBERS_URL/e00001/.well-known/openid-federation" && break
    sleep 0.05
done
curl -fs -o /dev/null "$MEMBERS_URL/e00001/.well-known/openid-federation" || die "members not served"
pharos_start col $COL

TA_ID=http://127.0.0.1:$COL
t0=$(date +%s%N)
admin $COL POST /federation-endpoints "{\"type\":\"entity_collection\",\"path\":\"/collection\",\"config\":{\"allowed_trust_anchors\":[\"$TA_ID\"],\"interval_seconds\":3600,\"pagination_limit\":100}}"
collected=0
for _ in $(seq 1 60000); do
    if curl -fs -o /dev/null "http://127.0.0.1:$COL/collection?limit=1" 2>/dev/null; then
        collected=1
        break
    fi
    sleep 0.01
done
[ "$collected" = 1 ] || die "the collection never answered"
COLLECT_S=$(py "print(round(($(date +%s%N) - $t0) / 1e9, 2))")
COUNT=$(py "
import json, urllib.request, urllib.parse
n, nxt = 0, None
while True:
    q = '?' + urllib.parse.urlencode({'from': nxt}) if nxt else ''
    v = json.load(urllib.request.urlopen('http://127.0.0.1:$COL/collection' + q))
    n += len(v['entities']); nxt = v.get('next')
    if not nxt: break
print(n)")
[ "$COUNT" = "$N" ] || die "collected $COUNT of $N entities"
row "| entity collection of a $N-entity loopback federation (enable → first answer, all fetched and verified) | $COLLECT_S s | | | | |"
note "Entity collection: $N leaves under one anchor, each Entity Configuration fetched from nginx over loopback (32 at once) and its ES256 signature checked; RSS after: $(rss_mb col) MB."

QUERY="/collection?entity_type=openid_provider&language_tag=it&limit=100"
curl -fsS "http://127.0.0.1:$COL$QUERY" >"$WORK/collection.json"
ref_add collection "$WORK/collection.json" application/json
compare "entity collection, filtered page of 100 from the periodic cache, req/s ($(wc -c <"$WORK/collection.json") bytes)" "http://127.0.0.1:$COL$QUERY" collection
pharos_stop col
kill "$MEMBERS_PID" 2>/dev/null || true
wait "$MEMBERS_PID" 2>/dev/null || true

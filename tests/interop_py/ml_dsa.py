#!/usr/bin/env python3
"""ML-DSA JWS with an implementation independent of Pharos: dilithium-py (pure Python FIPS 204).

Reads one JSON request on stdin, writes one JSON answer on stdout:

  {"keys":   [{"alg": "ML-DSA-44", "seed": "<base64url 32 bytes>"}, ...],
   "sign":   [{"alg": ..., "seed": ..., "kid": ..., "typ": ..., "claims": {...}}, ...],
   "verify": [{"jws": "<compact JWS>", "jwks": {"keys": [...]}}, ...]}
->
  {"keys":   [<public AKP JWK with its RFC 7638 thumbprint kid>, ...],
   "signed": ["<compact JWS>", ...],
   "verified": [{"ok": true, "alg": ..., "kid": ...} | {"ok": false, "why": ...}, ...]}

As draft-ietf-cose-dilithium defines it: an AKP key names its parameter set in "alg" and holds
the encoded public key in "pub"; "priv" is the 32-byte seed; the signature is pure ML-DSA over
the JWS signing input with an empty context. The thumbprint hashes alg, kty, pub.
"""

import base64
import hashlib
import json
import sys

from dilithium_py.ml_dsa import ML_DSA_44, ML_DSA_65, ML_DSA_87

SETS = {"ML-DSA-44": ML_DSA_44, "ML-DSA-65": ML_DSA_65, "ML-DSA-87": ML_DSA_87}


def b64e(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def public_jwk(alg: str, seed: bytes) -> dict:
    pk, _sk = SETS[alg].key_derive(seed)
    canonical = json.dumps({"alg": alg, "kty": "AKP", "pub": b64e(pk)}, separators=(",", ":"))
    kid = b64e(hashlib.sha256(canonical.encode()).digest())
    return {"kty": "AKP", "alg": alg, "pub": b64e(pk), "kid": kid, "use": "sig"}


def sign(req: dict) -> str:
    alg, seed = req["alg"], b64d(req["seed"])
    _pk, sk = SETS[alg].key_derive(seed)
    kid = req.get("kid") or public_jwk(alg, seed)["kid"]
    header = {"alg": alg, "kid": kid, "typ": req["typ"]}
    signing_input = (
        b64e(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64e(json.dumps(req["claims"], separators=(",", ":")).encode())
    )
    sig = SETS[alg].sign(sk, signing_input.encode(), ctx=b"")
    return signing_input + "." + b64e(sig)


def verify(req: dict) -> dict:
    try:
        head, payload, sig = req["jws"].split(".")
        header = json.loads(b64d(head))
        alg, kid = header["alg"], header["kid"]
        keys = [k for k in req["jwks"]["keys"] if k.get("kid") == kid]
        if len(keys) != 1:
            return {"ok": False, "why": f"kid {kid} not in the key set"}
        key = keys[0]
        if key.get("kty") != "AKP" or key.get("alg") != alg or alg not in SETS:
            return {"ok": False, "why": f"key {kid} cannot verify {alg}"}
        ok = SETS[alg].verify(b64d(key["pub"]), f"{head}.{payload}".encode(), b64d(sig), ctx=b"")
        return {"ok": bool(ok), "alg": alg, "kid": kid, "why": "" if ok else "signature mismatch"}
    except Exception as e:  # noqa: BLE001 - reported to the test as a failed check
        return {"ok": False, "why": repr(e)}


def main() -> None:
    request = json.load(sys.stdin)
    answer = {
        "keys": [public_jwk(k["alg"], b64d(k["seed"])) for k in request.get("keys", [])],
        "signed": [sign(s) for s in request.get("sign", [])],
        "verified": [verify(v) for v in request.get("verify", [])],
    }
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()

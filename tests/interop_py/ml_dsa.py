#!/usr/bin/env python3
"""ML-DSA JWS with an implementation independent of Pharos: dilithium-py (pure Python FIPS 204),
and for the composites of draft-ietf-jose-pq-composite-sigs-03 dilithium-py with pyca
`cryptography` (OpenSSL) for the ECDSA and EdDSA halves.

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
the JWS signing input with an empty context. The thumbprint hashes alg, kty, pub. A composite
signs M' = "CompositeAlgorithmSignatures2025" || label || 0x00 || PH(signing input) with ML-DSA
(context: the label) and with the classic algorithm, and concatenates the two; its pub is the
ML-DSA key then the classic one (ECDSA x || y). Only verification is offered for composites.
"""

import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed448 import Ed448PublicKey
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from dilithium_py.ml_dsa import ML_DSA_44, ML_DSA_65, ML_DSA_87

SETS = {"ML-DSA-44": ML_DSA_44, "ML-DSA-65": ML_DSA_65, "ML-DSA-87": ML_DSA_87}
# Public key and signature sizes (FIPS 204 Table 2).
SIZES = {"ML-DSA-44": (1312, 2420), "ML-DSA-65": (1952, 3309), "ML-DSA-87": (2592, 4627)}
PREFIX = b"CompositeAlgorithmSignatures2025"


def shake256_64(data: bytes) -> bytes:
    return hashlib.shake_256(data).digest(64)


# alg -> (ML-DSA set, classic, pre-hash, label), draft-ietf-jose-pq-composite-sigs-03.
COMPOSITES = {
    "ML-DSA-44-ES256": ("ML-DSA-44", "P-256", lambda m: hashlib.sha256(m).digest(),
                        b"COMPSIG-MLDSA44-ECDSA-P256-SHA256"),
    "ML-DSA-65-ES256": ("ML-DSA-65", "P-256", lambda m: hashlib.sha512(m).digest(),
                        b"COMPSIG-MLDSA65-ECDSA-P256-SHA512"),
    "ML-DSA-87-ES384": ("ML-DSA-87", "P-384", lambda m: hashlib.sha512(m).digest(),
                        b"COMPSIG-MLDSA87-ECDSA-P384-SHA512"),
    "ML-DSA-44-Ed25519": ("ML-DSA-44", "Ed25519", lambda m: hashlib.sha512(m).digest(),
                          b"COMPSIG-MLDSA44-Ed25519-SHA512"),
    "ML-DSA-65-Ed25519": ("ML-DSA-65", "Ed25519", lambda m: hashlib.sha512(m).digest(),
                          b"COMPSIG-MLDSA65-Ed25519-SHA512"),
    "ML-DSA-87-Ed448": ("ML-DSA-87", "Ed448", shake256_64, b"COMPSIG-MLDSA87-Ed448-SHAKE256"),
}


def composite_ok(alg: str, pub: bytes, signing_input: bytes, sig: bytes) -> bool:
    ml, classic, pre_hash, label = COMPOSITES[alg]
    pk_len, sig_len = SIZES[ml]
    message = PREFIX + label + b"\x00" + pre_hash(signing_input)
    if not SETS[ml].verify(pub[:pk_len], message, sig[:sig_len], ctx=label):
        return False
    cpub, csig = pub[pk_len:], sig[sig_len:]
    try:
        if classic in ("P-256", "P-384"):
            curve, digest, size = (
                (ec.SECP256R1(), hashes.SHA256(), 32) if classic == "P-256"
                else (ec.SECP384R1(), hashes.SHA384(), 48))
            if len(cpub) != 2 * size or len(csig) != 2 * size:
                return False
            key = ec.EllipticCurvePublicNumbers(
                int.from_bytes(cpub[:size], "big"), int.from_bytes(cpub[size:], "big"), curve
            ).public_key()
            der = encode_dss_signature(int.from_bytes(csig[:size], "big"),
                                       int.from_bytes(csig[size:], "big"))
            key.verify(der, message, ec.ECDSA(digest))
        elif classic == "Ed25519":
            Ed25519PublicKey.from_public_bytes(cpub).verify(csig, message)
        else:
            Ed448PublicKey.from_public_bytes(cpub).verify(csig, message)
    except Exception:  # noqa: BLE001 - any failure of the classic half is a failed check
        return False
    return True


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
        if key.get("kty") != "AKP" or key.get("alg") != alg or alg not in {**SETS, **COMPOSITES}:
            return {"ok": False, "why": f"key {kid} cannot verify {alg}"}
        signing_input = f"{head}.{payload}".encode()
        if alg in COMPOSITES:
            ok = composite_ok(alg, b64d(key["pub"]), signing_input, b64d(sig))
        else:
            ok = SETS[alg].verify(b64d(key["pub"]), signing_input, b64d(sig), ctx=b"")
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

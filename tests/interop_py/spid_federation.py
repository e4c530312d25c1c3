"""A SPID/CIE-style federation signed with cryptojwt, the JOSE library of spid-cie-oidc.

Run by tests/interop_spid.rs:

    python3 spid_federation.py BASE PREFIX MAX_PATH_LENGTH

BASE is the loopback URL the Rust test serves the statements from, PREFIX a path segment that
keeps several federations apart on one server. Prints one JSON object:

    {"entities": {name: entity_id}, "ta_jwks": {...},
     "documents": [[path, sub or null, compact JWS], ...],
     "marks": {name: trust mark JWT}}

The shapes are those spid-cie-oidc-django publishes (docs/interop.md lists each one):

- the Trust Anchor's Entity Configuration carries constraints.max_path_length and names its
  Trust Mark issuers `trust_marks_issuers` (releases before November 2023);
- Subordinate Statements carry metadata_policy with empty per-type objects, source_endpoint
  and a copy of the subject's trust_marks (FederationDescendant.entity_statement_as_dict);
- leaves' Trust Marks name their type `id` (releases before 2025) or `trust_mark_id` (2025),
  in the trust_marks entry and inside the JWT, and carry no trust_mark_type;
- every key is RSA, every signature RS256, with the typ headers of the final text.
"""

import json
import sys
import time

from cryptojwt.jwk.rsa import new_rsa_key
from cryptojwt.jws.jws import JWS

TM_PUBLIC = "https://registry.interop.example/openid_relying_party/public/"
TM_PRIVATE = "https://registry.interop.example/openid_relying_party/private/"


def key():
    k = new_rsa_key(key_size=2048)
    k.add_kid()
    return k


def sign(k, payload, typ):
    return JWS(json.dumps(payload), alg="RS256", typ=typ).sign_compact([k])


def main():
    base, prefix, max_path_length = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # An extra superior the leaves name (an enrolling Pharos), if given.
    extra_hints = sys.argv[4:5]
    now = int(time.time())
    ids = {
        name: f"{base}/{prefix}/{name}"
        for name in ["ta", "ia", "leaf-old", "leaf-2025", "leaf-direct", "rogue"]
    }
    keys = {name: key() for name in ids}
    pub = {name: {"keys": [k.serialize(private=False)]} for name, k in keys.items()}
    documents = []

    def fed_entity(name, extra=None):
        md = {
            "federation_fetch_endpoint": f"{ids[name]}/fetch",
            "federation_resolve_endpoint": f"{ids[name]}/resolve",
            "federation_list_endpoint": f"{ids[name]}/list",
            "federation_trust_mark_status_endpoint": f"{ids[name]}/trust_mark_status",
            "organization_name": f"{name} (SPID-style)",
            "homepage_uri": ids[name],
            "contacts": [f"ops@{name}.interop.example"],
        }
        md.update(extra or {})
        return md

    def entity_configuration(name, claims):
        payload = {
            "exp": now + 2880 * 60,
            "iat": now,
            "iss": ids[name],
            "sub": ids[name],
            "jwks": pub[name],
        }
        payload.update(claims)
        path = f"/{prefix}/{name}/.well-known/openid-federation"
        documents.append([path, None, sign(keys[name], payload, "entity-statement+jwt")])

    def statement(sup, sub, policy, marks=None):
        payload = {
            "exp": now + 2880 * 60,
            "iat": now,
            "iss": ids[sup],
            "sub": ids[sub],
            "jwks": pub[sub],
            "metadata_policy": policy,
            "source_endpoint": f"{ids[sup]}/fetch",
        }
        if marks:
            payload["trust_marks"] = marks
        path = f"/{prefix}/{sup}/fetch"
        documents.append([path, ids[sub], sign(keys[sup], payload, "entity-statement+jwt")])

    def trust_mark(issuer, sub, tm_type, name):
        payload = {
            name: tm_type,
            "iss": ids[issuer],
            "sub": ids[sub],
            "iat": now,
            "logo_uri": "https://registry.interop.example/logo.svg",
            "ref": "https://docs.interop.example/regole-tecniche-oidc/",
            "organization_type": "public",
            "id_code": {"ipa_code": "c_h501"},
            "email": f"ops@{sub}.interop.example",
        }
        return sign(keys[issuer], payload, "trust-mark+jwt")

    def rp_metadata(name):
        return {
            "application_type": "web",
            "client_id": ids[name],
            "client_registration_types": ["automatic"],
            "client_name": f"Relying Party {name}",
            "contacts": [f"ops@{name}.interop.example"],
            "grant_types": ["refresh_token", "authorization_code", "implicit"],
            "redirect_uris": [f"{ids[name]}/callback"],
            "response_types": ["code"],
            "subject_type": "pairwise",
            "jwks": {"keys": [key().serialize(private=False)]},
        }

    # FEDERATION_DEFAULT_POLICY of spid-cie-oidc: empty objects for the types it leaves alone.
    default_policy = {
        "openid_relying_party": {
            "grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
        },
        "federation_entity": {},
        "oauth_resource": {},
    }
    leaf_policy = {
        "openid_relying_party": {
            "grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
            "contacts": {"add": ["tech@ia.interop.example"]},
        },
        "federation_entity": {},
    }

    entity_configuration(
        "ta",
        {
            "metadata": {"federation_entity": fed_entity("ta")},
            "trust_marks_issuers": {TM_PUBLIC: [ids["ta"], ids["ia"]], TM_PRIVATE: [ids["ia"]]},
            "constraints": {"max_path_length": max_path_length},
        },
    )
    entity_configuration(
        "ia",
        {"metadata": {"federation_entity": fed_entity("ia")}, "authority_hints": [ids["ta"]]},
    )
    entity_configuration(
        "rogue", {"metadata": {"federation_entity": fed_entity("rogue")}}
    )
    statement("ta", "ia", default_policy)

    marks = {
        "leaf-old": ("ia", TM_PUBLIC, "id"),
        "leaf-2025": ("ia", TM_PRIVATE, "trust_mark_id"),
        "leaf-direct": ("ta", TM_PUBLIC, "id"),
    }
    issued = {}
    for leaf, (issuer, tm_type, name) in marks.items():
        jwt = trust_mark(issuer, leaf, tm_type, name)
        issued[leaf] = jwt
        entries = [{name: tm_type, "trust_mark": jwt}]
        if leaf == "leaf-direct":
            # A mark from an issuer the anchor does not list: never in a resolve response.
            rogue = trust_mark("rogue", leaf, TM_PRIVATE, "id")
            entries.append({"id": TM_PRIVATE, "trust_mark": rogue})
        superior = "ta" if leaf == "leaf-direct" else "ia"
        entity_configuration(
            leaf,
            {
                "metadata": {
                    "openid_relying_party": rp_metadata(leaf),
                    "federation_entity": {
                        "organization_name": f"Relying Party {leaf}",
                        "homepage_uri": ids[leaf],
                        "contacts": [f"ops@{leaf}.interop.example"],
                    },
                },
                "authority_hints": [ids[superior], *extra_hints],
                "trust_marks": entries,
            },
        )
        statement(superior, leaf, leaf_policy, marks=entries)

    print(
        json.dumps(
            {
                "entities": ids,
                "ta_jwks": pub["ta"],
                "documents": documents,
                "marks": issued,
                "types": {"public": TM_PUBLIC, "private": TM_PRIVATE},
            }
        )
    )


if __name__ == "__main__":
    main()

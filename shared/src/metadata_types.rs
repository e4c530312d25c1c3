//! The JSON types the specifications give metadata parameters, per entity type, and the one
//! check every writer of metadata runs before storing it: the Admin API's metadata documents
//! (our Entity Configuration, the subordinates' and the general one, member by member or
//! whole) and their policies' entity types.
//!
//! Parameters nobody defined stay allowed (metadata is extensible); a parameter the
//! specifications define must have their type, so `"redirect_uris": "https://x"` is refused
//! instead of being signed into a statement every relying party then misreads. An entity
//! type outside the table is refused unless the operator allows it
//! (`federation.accept.entity_types`); its parameters are then not checked.
//!
//! Sources (the table is the specifications', parameter by parameter):
//! - OpenID Federation 1.0 §5.1 (`federation_entity`) and §5.2.2 (common to every type), and
//!   §12 (the registration parameters it adds to OpenID Connect);
//! - OpenID Connect Discovery 1.0 §3, RP-Initiated/Front-/Back-Channel Logout 1.0
//!   (`openid_provider`); OpenID Connect Dynamic Client Registration 1.0 §2
//!   (`openid_relying_party`);
//! - RFC 8414 §2 (`oauth_authorization_server`), RFC 7591 §2 (`oauth_client`), RFC 9728 §2
//!   (`oauth_resource`), with RFC 9126 (PAR) and RFC 9449 (DPoP) parameters;
//! - OpenID for Verifiable Credential Issuance 1.0 §12.2 (`openid_credential_issuer`), OpenID
//!   for Verifiable Presentations 1.0 (`openid_credential_verifier`, client metadata) and the
//!   OpenID Federation for Wallet Architectures draft 05 (`openid_wallet_provider`: wallet
//!   metadata, authorization server metadata with `vp_formats_supported` and
//!   `client_id_prefixes_supported`; the verifier's `request_uris`), whose profile rule
//!   [`check_wallet_profile`] applies at enrollment.

use serde_json::{Map, Value};

/// The JSON type of a metadata parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A string.
    Str,
    /// An absolute URI (a string with a scheme).
    Uri,
    /// `true` or `false`.
    Bool,
    /// A JSON number.
    Number,
    /// A JSON object.
    Object,
    /// An array of strings.
    Strs,
    /// An array of absolute URIs.
    Uris,
    /// An array of objects.
    Objects,
    /// A JWK Set: an object whose `keys` is an array of objects.
    Jwks,
}

impl ParamType {
    /// How the type reads in an error message.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Str => "a string",
            Self::Uri => "a URI string",
            Self::Bool => "a boolean",
            Self::Number => "a number",
            Self::Object => "a JSON object",
            Self::Strs => "an array of strings",
            Self::Uris => "an array of URI strings",
            Self::Objects => "an array of JSON objects",
            Self::Jwks => "a JWK Set ({\"keys\": [...]})",
        }
    }

    /// Whether `v` has this type.
    pub fn accepts(self, v: &Value) -> bool {
        match self {
            Self::Str => v.is_string(),
            Self::Uri => v.as_str().is_some_and(is_uri),
            Self::Bool => v.is_boolean(),
            Self::Number => v.is_number(),
            Self::Object => v.is_object(),
            Self::Strs => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            Self::Uris => v
                .as_array()
                .is_some_and(|a| a.iter().all(|u| u.as_str().is_some_and(is_uri))),
            Self::Objects => v.as_array().is_some_and(|a| a.iter().all(Value::is_object)),
            Self::Jwks => v
                .get("keys")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().all(Value::is_object)),
        }
    }
}

/// An absolute URI: parses with a scheme (custom schemes of native apps included).
fn is_uri(s: &str) -> bool {
    !s.is_empty() && url::Url::parse(s).is_ok()
}

use ParamType::{Bool, Jwks, Number, Object, Objects, Str, Strs, Uri, Uris};

/// One parameter and its type.
pub type Param = (&'static str, ParamType);

/// Parameters every entity type may carry (OpenID Federation §5.2.2, and the key members of
/// §5.2.1).
pub const COMMON: &[Param] = &[
    ("organization_name", Str),
    ("display_name", Str),
    ("description", Str),
    ("keywords", Strs),
    ("contacts", Strs),
    ("logo_uri", Uri),
    ("policy_uri", Uri),
    ("information_uri", Uri),
    ("organization_uri", Uri),
    ("signed_jwks_uri", Uri),
    ("jwks_uri", Uri),
    ("jwks", Jwks),
];

/// `federation_entity` (OpenID Federation §5.1.1).
const FEDERATION_ENTITY: &[Param] = &[
    ("federation_fetch_endpoint", Uri),
    ("federation_list_endpoint", Uri),
    ("federation_resolve_endpoint", Uri),
    ("federation_trust_mark_status_endpoint", Uri),
    ("federation_trust_mark_list_endpoint", Uri),
    ("federation_trust_mark_endpoint", Uri),
    ("federation_historical_keys_endpoint", Uri),
    ("endpoint_auth_signing_alg_values_supported", Strs),
];

/// Authorization server metadata shared by `openid_provider` and `oauth_authorization_server`
/// (RFC 8414 §2, RFC 9126, RFC 9449, RFC 8705).
const AUTHORIZATION_SERVER: &[Param] = &[
    ("issuer", Uri),
    ("authorization_endpoint", Uri),
    ("token_endpoint", Uri),
    ("registration_endpoint", Uri),
    ("scopes_supported", Strs),
    ("response_types_supported", Strs),
    ("response_modes_supported", Strs),
    ("grant_types_supported", Strs),
    ("token_endpoint_auth_methods_supported", Strs),
    ("token_endpoint_auth_signing_alg_values_supported", Strs),
    ("service_documentation", Uri),
    ("ui_locales_supported", Strs),
    ("op_policy_uri", Uri),
    ("op_tos_uri", Uri),
    ("revocation_endpoint", Uri),
    ("revocation_endpoint_auth_methods_supported", Strs),
    (
        "revocation_endpoint_auth_signing_alg_values_supported",
        Strs,
    ),
    ("introspection_endpoint", Uri),
    ("introspection_endpoint_auth_methods_supported", Strs),
    (
        "introspection_endpoint_auth_signing_alg_values_supported",
        Strs,
    ),
    ("code_challenge_methods_supported", Strs),
    ("pushed_authorization_request_endpoint", Uri),
    ("require_pushed_authorization_requests", Bool),
    ("dpop_signing_alg_values_supported", Strs),
    ("tls_client_certificate_bound_access_tokens", Bool),
    ("mtls_endpoint_aliases", Object),
];

/// `openid_provider` beyond [`AUTHORIZATION_SERVER`] (OpenID Connect Discovery 1.0 §3, the
/// logout specifications, OpenID Federation §5.1.3 and §12).
const OPENID_PROVIDER: &[Param] = &[
    ("userinfo_endpoint", Uri),
    ("acr_values_supported", Strs),
    ("subject_types_supported", Strs),
    ("id_token_signing_alg_values_supported", Strs),
    ("id_token_encryption_alg_values_supported", Strs),
    ("id_token_encryption_enc_values_supported", Strs),
    ("userinfo_signing_alg_values_supported", Strs),
    ("userinfo_encryption_alg_values_supported", Strs),
    ("userinfo_encryption_enc_values_supported", Strs),
    ("request_object_signing_alg_values_supported", Strs),
    ("request_object_encryption_alg_values_supported", Strs),
    ("request_object_encryption_enc_values_supported", Strs),
    ("display_values_supported", Strs),
    ("claim_types_supported", Strs),
    ("claims_supported", Strs),
    ("claims_locales_supported", Strs),
    ("claims_parameter_supported", Bool),
    ("request_parameter_supported", Bool),
    ("request_uri_parameter_supported", Bool),
    ("require_request_uri_registration", Bool),
    ("end_session_endpoint", Uri),
    ("check_session_iframe", Uri),
    ("frontchannel_logout_supported", Bool),
    ("frontchannel_logout_session_supported", Bool),
    ("backchannel_logout_supported", Bool),
    ("backchannel_logout_session_supported", Bool),
    ("client_registration_types_supported", Strs),
    ("federation_registration_endpoint", Uri),
    ("request_authentication_methods_supported", Object),
    ("request_authentication_signing_alg_values_supported", Strs),
];

/// Client metadata shared by `openid_relying_party`, `oauth_client` and
/// `openid_credential_verifier` (RFC 7591 §2).
const CLIENT: &[Param] = &[
    ("redirect_uris", Uris),
    ("token_endpoint_auth_method", Str),
    ("grant_types", Strs),
    ("response_types", Strs),
    ("client_name", Str),
    ("client_uri", Uri),
    ("scope", Str),
    ("tos_uri", Uri),
    ("software_id", Str),
    ("software_version", Str),
    ("token_endpoint_auth_signing_alg", Str),
    ("tls_client_certificate_bound_access_tokens", Bool),
    ("dpop_bound_access_tokens", Bool),
];

/// `openid_relying_party` beyond [`CLIENT`] (OpenID Connect Dynamic Client Registration 1.0
/// §2, the logout specifications, OpenID Federation §5.1.2 and §12).
const OPENID_RELYING_PARTY: &[Param] = &[
    ("application_type", Str),
    ("sector_identifier_uri", Uri),
    ("subject_type", Str),
    ("id_token_signed_response_alg", Str),
    ("id_token_encrypted_response_alg", Str),
    ("id_token_encrypted_response_enc", Str),
    ("userinfo_signed_response_alg", Str),
    ("userinfo_encrypted_response_alg", Str),
    ("userinfo_encrypted_response_enc", Str),
    ("request_object_signing_alg", Str),
    ("request_object_encryption_alg", Str),
    ("request_object_encryption_enc", Str),
    ("default_max_age", Number),
    ("require_auth_time", Bool),
    ("default_acr_values", Strs),
    ("initiate_login_uri", Uri),
    ("request_uris", Uris),
    ("post_logout_redirect_uris", Uris),
    ("frontchannel_logout_uri", Uri),
    ("frontchannel_logout_session_required", Bool),
    ("backchannel_logout_uri", Uri),
    ("backchannel_logout_session_required", Bool),
    ("client_registration_types", Strs),
];

/// `oauth_resource` (RFC 9728 §2).
const OAUTH_RESOURCE: &[Param] = &[
    ("resource", Uri),
    ("authorization_servers", Uris),
    ("scopes_supported", Strs),
    ("bearer_methods_supported", Strs),
    ("resource_signing_alg_values_supported", Strs),
    ("resource_name", Str),
    ("resource_documentation", Uri),
    ("resource_policy_uri", Uri),
    ("resource_tos_uri", Uri),
    ("tls_client_certificate_bound_access_tokens", Bool),
    ("authorization_details_types_supported", Strs),
    ("dpop_signing_alg_values_supported", Strs),
    ("dpop_bound_access_tokens_required", Bool),
];

/// `openid_credential_issuer` (OpenID for Verifiable Credential Issuance 1.0 §12.2.4).
const CREDENTIAL_ISSUER: &[Param] = &[
    ("credential_issuer", Uri),
    ("authorization_servers", Uris),
    ("credential_endpoint", Uri),
    ("nonce_endpoint", Uri),
    ("deferred_credential_endpoint", Uri),
    ("notification_endpoint", Uri),
    ("credential_request_encryption", Object),
    ("credential_response_encryption", Object),
    ("batch_credential_issuance", Object),
    ("signed_metadata", Str),
    ("display", Objects),
    ("credential_configurations_supported", Object),
];

/// `openid_credential_verifier` beyond [`CLIENT`] (OpenID for Verifiable Presentations 1.0,
/// verifier client metadata).
const CREDENTIAL_VERIFIER: &[Param] = &[
    ("vp_formats", Object),
    ("vp_formats_supported", Object),
    ("encrypted_response_enc_values_supported", Strs),
    ("response_uris", Uris),
    ("request_uris", Uris),
];

/// `openid_wallet_provider` beyond [`AUTHORIZATION_SERVER`]: the Wallet Architectures draft
/// (§6.1) gives a Wallet Provider OpenID for Verifiable Presentations' wallet metadata, which
/// is authorization server metadata with these.
const WALLET_PROVIDER: &[Param] = &[
    ("vp_formats_supported", Object),
    ("client_id_prefixes_supported", Strs),
];

/// The entity types of the specifications with their own parameters (besides [`COMMON`]).
pub const ENTITY_TYPES: &[(&str, &[&[Param]])] = &[
    ("federation_entity", &[FEDERATION_ENTITY]),
    ("openid_provider", &[AUTHORIZATION_SERVER, OPENID_PROVIDER]),
    ("openid_relying_party", &[CLIENT, OPENID_RELYING_PARTY]),
    ("oauth_authorization_server", &[AUTHORIZATION_SERVER]),
    ("oauth_client", &[CLIENT]),
    ("oauth_resource", &[OAUTH_RESOURCE]),
    (
        "openid_wallet_provider",
        &[AUTHORIZATION_SERVER, WALLET_PROVIDER],
    ),
    ("openid_credential_issuer", &[CREDENTIAL_ISSUER]),
    ("openid_credential_verifier", &[CLIENT, CREDENTIAL_VERIFIER]),
];

/// The Wallet Architectures draft's rule for an Entity Configuration's metadata (§6.2.1): a
/// Credential Issuer's `credential_issuer` "MUST be a case-sensitive `https` URL and MUST be
/// equal to the `iss`/`sub` pair value in the Credential Issuer's Entity Configuration". A
/// wallet takes the issuer's identity from that parameter, so enrolling an entity that names
/// another would vouch for that other. Metadata without the type passes.
pub fn check_wallet_profile(entity_id: &str, metadata: &Map<String, Value>) -> Result<(), String> {
    let Some(issuer) = metadata.get("openid_credential_issuer") else {
        return Ok(());
    };
    match issuer.get("credential_issuer").and_then(Value::as_str) {
        Some(ci) if ci == entity_id && ci.starts_with("https://") => Ok(()),
        Some(ci) => Err(format!(
            "openid_credential_issuer.credential_issuer {ci:?} must be the entity identifier \
             {entity_id:?}, an https URL (OpenID Federation for Wallet Architectures §6.2.1)"
        )),
        None => Err(
            "openid_credential_issuer.credential_issuer is missing (OpenID Federation for \
             Wallet Architectures §6.2.1)"
                .into(),
        ),
    }
}

/// Whether `t` is an entity type of the specifications.
pub fn is_known_entity_type(t: &str) -> bool {
    ENTITY_TYPES.iter().any(|(name, _)| *name == t)
}

/// The type of parameter `param` of entity type `entity_type`; `None` when the specifications
/// do not define it (or the entity type is not in the table).
pub fn param_type(entity_type: &str, param: &str) -> Option<ParamType> {
    let (_, tables) = ENTITY_TYPES.iter().find(|(name, _)| *name == entity_type)?;
    tables
        .iter()
        .copied()
        .chain(std::iter::once(COMMON))
        .flat_map(|t| t.iter())
        .find(|(name, _)| *name == param)
        .map(|(_, ty)| *ty)
}

/// Checks an entity type name: one of the table, or one the operator allows (`allowed`:
/// `federation.accept.entity_types`). The message starts with the name.
pub fn check_entity_type(t: &str, allowed: &[String]) -> Result<(), String> {
    if is_known_entity_type(t) || allowed.iter().any(|a| a == t) {
        return Ok(());
    }
    let close = ENTITY_TYPES
        .iter()
        .map(|(n, _)| *n)
        .find(|n| similar(n, t))
        .map(|n| format!(" (did you mean {n:?}?)"))
        .unwrap_or_default();
    Err(format!(
        "{t:?} is not an entity type of the specifications{close}; others only when listed in \
         federation.accept.entity_types"
    ))
}

/// Whether two names differ by at most two single-character edits (a typo).
fn similar(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 2 || a.len() > 64 || b.len() > 64 {
        return false;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()] <= 2
}

/// Checks one parameter's value (`at`: where it is, for the message).
pub fn check_param(entity_type: &str, param: &str, v: &Value, at: &str) -> Result<(), String> {
    match param_type(entity_type, param) {
        Some(ty) if !ty.accepts(v) => Err(format!("{at}: must be {}", ty.describe())),
        _ => Ok(()),
    }
}

/// Checks a whole `metadata` document (`{entity_type: {param: value}}`): every entity type
/// known or allowed, every value an object, every parameter of the table of its type. The
/// message names the place as `metadata.<type>.<param>`.
pub fn check_metadata(metadata: &Map<String, Value>, allowed: &[String]) -> Result<(), String> {
    for (t, params) in metadata {
        check_entity_type(t, allowed).map_err(|e| format!("metadata.{t}: {e}"))?;
        let params = params
            .as_object()
            .ok_or_else(|| format!("metadata.{t}: must be a JSON object"))?;
        for (p, v) in params {
            check_param(t, p, v, &format!("metadata.{t}.{p}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "metadata_types_tests.rs"]
mod tests;

//! From an Entity Configuration's claims to the [`EntityInfo`] the collector keeps.

use serde_json::{Map, Value};

use super::{CollectedMark, EntityInfo};

/// The UI claims kept per Entity Type (§5.2.2 informational metadata), each also in its
/// language-tagged variants (`display_name#it`).
pub const UI_CLAIMS: &[&str] = &[
    "display_name",
    "description",
    "keywords",
    "logo_uri",
    "policy_uri",
    "information_uri",
    "organization_name",
    "organization_uri",
    "contacts",
];

/// Claims UI claims that are arrays of strings; the others are strings.
const ARRAY_CLAIMS: &[&str] = &["keywords", "contacts"];

/// Names other Entity Types use for the display name (the draft's implementation
/// considerations): an RP or OAuth client's `client_name`, a protected resource's
/// `resource_name`. Used only when no `display_name` of the same language exists.
const DISPLAY_NAME_FALLBACKS: &[&str] = &["client_name", "resource_name"];

/// The claim name without its language tag, and the tag.
pub fn split_tag(name: &str) -> (&str, Option<&str>) {
    match name.split_once('#') {
        Some((base, tag)) => (base, Some(tag)),
        None => (name, None),
    }
}

/// The Entity Info of `entity_id` from its EC `claims` and its verified Trust Marks. Entity
/// Types are the metadata's members (objects only); UI values of the wrong JSON type are
/// dropped rather than passed on to clients that display them.
pub fn entity_info(
    entity_id: &str,
    claims: &Map<String, Value>,
    trust_marks: Vec<CollectedMark>,
) -> EntityInfo {
    let mut entity_types = Vec::new();
    let mut ui_infos = Map::new();
    if let Some(Value::Object(metadata)) = claims.get("metadata") {
        for (kind, meta) in metadata {
            let Value::Object(meta) = meta else { continue };
            entity_types.push(kind.clone());
            let ui = ui_info(meta);
            if !ui.is_empty() {
                ui_infos.insert(kind.clone(), Value::Object(ui));
            }
        }
    }
    entity_types.sort();
    EntityInfo {
        entity_id: entity_id.to_owned(),
        entity_types,
        ui_infos,
        trust_marks,
        superior: None,
    }
}

fn ui_info(meta: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in meta {
        let (base, _) = split_tag(name);
        if UI_CLAIMS.contains(&base) && well_typed(base, value) {
            out.insert(name.clone(), value.clone());
        }
    }
    for (name, value) in meta {
        let (base, tag) = split_tag(name);
        if !DISPLAY_NAME_FALLBACKS.contains(&base) || !well_typed("display_name", value) {
            continue;
        }
        let target = match tag {
            Some(t) => format!("display_name#{t}"),
            None => "display_name".to_owned(),
        };
        out.entry(target).or_insert_with(|| value.clone());
    }
    display_array(meta, &mut out);
    out
}

/// OpenID for Verifiable Credential Issuance's `display` (a Credential Issuer's metadata, which
/// the Wallet Architectures draft puts under `openid_credential_issuer`): an array of
/// `{name, locale, logo: {uri}, description}`, one per language. Each becomes the UI claims of
/// its language (`display_name#de`, `logo_uri#de`; without `locale`, the untagged ones), where
/// the metadata has none of its own: a wallet lists issuers by these names.
fn display_array(meta: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(Value::Array(displays)) = meta.get("display") else {
        return;
    };
    for d in displays {
        let Value::Object(d) = d else { continue };
        let tagged = |base: &str| match d.get("locale").and_then(Value::as_str) {
            Some(locale) if !locale.is_empty() => format!("{base}#{locale}"),
            _ => base.to_owned(),
        };
        let logo = d.get("logo").and_then(|l| l.get("uri"));
        for (base, value) in [
            ("display_name", d.get("name")),
            ("description", d.get("description")),
            ("logo_uri", logo),
        ] {
            if let Some(v) = value.filter(|v| v.is_string()) {
                out.entry(tagged(base)).or_insert_with(|| v.clone());
            }
        }
    }
}

fn well_typed(base: &str, value: &Value) -> bool {
    if ARRAY_CLAIMS.contains(&base) {
        value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string))
    } else {
        value.is_string()
    }
}

//! Trust Chain constraints (§6.2): `max_path_length`, `naming_constraints` and
//! `allowed_entity_types`, each checked independently per Subordinate Statement.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sets::invalid_policy;
use crate::Result;

/// The `constraints` claim of a Subordinate Statement. Unknown members are ignored on input, as
/// §6.2 requires.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Constraints {
    /// Maximum number of Intermediates between the statement's issuer and the chain subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_path_length: Option<u32>,
    /// Restrictions on the Entity IDs of the subject and everything below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming_constraints: Option<NamingConstraints>,
    /// Entity Types the subject may have (besides `federation_entity`, always allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_entity_types: Option<Vec<String>>,
}

impl Constraints {
    /// Reads a `constraints` object as an operator wrote it, naming the member that does not
    /// fit and what it must be (serde alone says only "expected u32").
    pub fn from_json(v: &Value) -> std::result::Result<Self, String> {
        let Value::Object(m) = v else {
            return Err(format!("constraints must be a JSON object, got {v}"));
        };
        if let Some(n) = m.get("max_path_length")
            && n.as_u64().is_none_or(|n| n > u64::from(u32::MAX))
        {
            return Err(format!(
                "max_path_length must be a whole number from 0 to {}, got {n}",
                u32::MAX
            ));
        }
        let strings = |name: &str, v: &Value| match v {
            Value::Array(a) if a.iter().all(Value::is_string) => Ok(()),
            other => Err(format!("{name} must be an array of strings, got {other}")),
        };
        if let Some(nc) = m.get("naming_constraints") {
            let Value::Object(nc) = nc else {
                return Err(format!(
                    "naming_constraints must be an object with \"permitted\" and/or \"excluded\" \
                     host names, got {nc}"
                ));
            };
            for member in ["permitted", "excluded"] {
                if let Some(v) = nc.get(member) {
                    strings(&format!("naming_constraints.{member}"), v)?;
                }
            }
        }
        if let Some(t) = m.get("allowed_entity_types") {
            strings("allowed_entity_types", t)?;
        }
        serde_json::from_value(v.clone()).map_err(|e| e.to_string())
    }
}

/// `naming_constraints` (§6.2.2): host name constraints with RFC 5280 §4.2.1.10 URI semantics.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct NamingConstraints {
    /// If non-empty, every checked Entity ID's host must match one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permitted: Vec<String>,
    /// A host matching any of these is rejected; exclusion wins over permission.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
}

/// Build the error for a failed constraint; there is no dedicated variant, so it is reported as
/// an `invalid_policy` whose message starts with "constraint violated:".
fn violated(msg: impl std::fmt::Display) -> crate::Error {
    invalid_policy(format!("constraint violated: {msg}"))
}

/// Check `max_path_length` of the statement issued at chain position `j` (`ES[j]`), where
/// `intermediates_below = j - 1` is the number of Intermediates between its issuer and the
/// chain subject (§6.2.1). Passing when the constraint is absent.
pub fn check_max_path_length(c: &Constraints, intermediates_below: usize) -> Result<()> {
    match c.max_path_length {
        Some(max) if intermediates_below > max as usize => Err(violated(format!(
            "max_path_length {max} exceeded by {intermediates_below} intermediates"
        ))),
        _ => Ok(()),
    }
}

/// RFC 5280 URI-style host match (§6.2.2): a constraint with a leading dot matches any
/// subdomain but not the domain itself; without a leading dot it matches exactly that host.
/// Comparison is ASCII case-insensitive, since DNS names are.
fn host_matches(constraint: &str, host: &str) -> bool {
    let constraint = constraint.to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    if constraint.starts_with('.') {
        host.ends_with(&constraint) && host.len() > constraint.len()
    } else {
        host == constraint
    }
}

/// Check an Entity ID (the statement's subject or any Entity below it) against
/// `naming_constraints` (§6.2.2). Excluded matches always fail; a non-empty `permitted` list
/// must contain a match.
pub fn check_naming(c: &Constraints, entity_id: &str) -> Result<()> {
    let Some(nc) = &c.naming_constraints else {
        return Ok(());
    };
    if nc.permitted.is_empty() && nc.excluded.is_empty() {
        return Ok(());
    }
    let url = url::Url::parse(entity_id)
        .map_err(|e| violated(format!("entity id {entity_id} is not a URL: {e}")))?;
    let host = url
        .host_str()
        .ok_or_else(|| violated(format!("entity id {entity_id} has no host")))?;
    if let Some(ex) = nc.excluded.iter().find(|ex| host_matches(ex, host)) {
        return Err(violated(format!("host {host} is excluded by {ex}")));
    }
    if !nc.permitted.is_empty() && !nc.permitted.iter().any(|p| host_matches(p, host)) {
        return Err(violated(format!("host {host} is not permitted")));
    }
    Ok(())
}

/// Apply `allowed_entity_types` (§6.2.3): remove every Entity Type not allowed from the
/// metadata; `federation_entity` is always kept. Absent constraint or non-object metadata
/// leaves the input unchanged.
pub fn filter_entity_types(c: &Constraints, metadata: &Value) -> Value {
    match (&c.allowed_entity_types, metadata) {
        (Some(allowed), Value::Object(md)) => Value::Object(
            md.iter()
                .filter(|(t, _)| *t == "federation_entity" || allowed.iter().any(|a| a == *t))
                .map(|(t, v)| (t.clone(), v.clone()))
                .collect(),
        ),
        _ => metadata.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn naming(permitted: &[&str], excluded: &[&str]) -> Constraints {
        Constraints {
            naming_constraints: Some(NamingConstraints {
                permitted: permitted.iter().map(|s| s.to_string()).collect(),
                excluded: excluded.iter().map(|s| s.to_string()).collect(),
            }),
            ..Default::default()
        }
    }

    fn is_violation(r: Result<()>) -> bool {
        matches!(r, Err(crate::Error::InvalidPolicy(m)) if m.starts_with("constraint violated:"))
    }

    #[test]
    fn policy_constraints_max_path_length() {
        let zero = Constraints {
            max_path_length: Some(0),
            ..Default::default()
        };
        assert!(check_max_path_length(&zero, 0).is_ok());
        assert!(is_violation(check_max_path_length(&zero, 1)));
        // LE <- I1 <- I2 <- TA: the TA's statement is ES[3], two Intermediates below.
        let one = Constraints {
            max_path_length: Some(1),
            ..Default::default()
        };
        let two = Constraints {
            max_path_length: Some(2),
            ..Default::default()
        };
        assert!(is_violation(check_max_path_length(&one, 2)));
        assert!(check_max_path_length(&two, 2).is_ok());
        assert!(check_max_path_length(&Constraints::default(), 100).is_ok());
    }

    #[test]
    fn policy_constraints_naming() {
        let c = naming(&[".example.com", "op.example.org"], &[".bad.example.com"]);
        assert!(check_naming(&c, "https://a.example.com").is_ok());
        assert!(check_naming(&c, "https://A.B.Example.com/path").is_ok());
        assert!(is_violation(check_naming(&c, "https://example.com")));
        assert!(check_naming(&c, "https://op.example.org").is_ok());
        assert!(is_violation(check_naming(&c, "https://x.op.example.org")));
        assert!(is_violation(check_naming(&c, "https://x.bad.example.com")));
        assert!(is_violation(check_naming(&c, "https://other.net")));
        assert!(is_violation(check_naming(&c, "not a url")));
        let only_excluded = naming(&[], &["evil.example"]);
        assert!(check_naming(&only_excluded, "https://good.example").is_ok());
        assert!(is_violation(check_naming(
            &only_excluded,
            "https://evil.example"
        )));
        assert!(check_naming(&Constraints::default(), "whatever").is_ok());
    }

    #[test]
    fn policy_constraints_allowed_entity_types() {
        let md = json!({"federation_entity": {"a": 1}, "openid_provider": {}, "openid_relying_party": {}});
        let c = Constraints {
            allowed_entity_types: Some(vec!["openid_provider".into()]),
            ..Default::default()
        };
        assert_eq!(
            filter_entity_types(&c, &md),
            json!({"federation_entity": {"a": 1}, "openid_provider": {}})
        );
        let none = Constraints {
            allowed_entity_types: Some(vec![]),
            ..Default::default()
        };
        assert_eq!(
            filter_entity_types(&none, &md),
            json!({"federation_entity": {"a": 1}})
        );
        assert_eq!(filter_entity_types(&Constraints::default(), &md), md);
    }

    #[test]
    fn policy_constraints_serde_ignores_unknown() {
        let c: Constraints = serde_json::from_value(json!({
            "max_path_length": 2, "naming_constraints": {"permitted": [".x.org"]}, "future": true
        }))
        .unwrap();
        assert_eq!(c.max_path_length, Some(2));
        assert_eq!(c.naming_constraints.unwrap().excluded, Vec::<String>::new());
    }

    #[test]
    fn an_operators_constraints_name_the_member_and_what_it_must_be() {
        let e = |v: Value| Constraints::from_json(&v).unwrap_err();
        let m = e(json!({"max_path_length": -1}));
        assert!(
            m.starts_with("max_path_length must be a whole number"),
            "{m}"
        );
        assert!(!m.contains("u32"), "{m}");
        let m = e(json!({"max_path_length": "2"}));
        assert!(m.contains("max_path_length") && m.contains("\"2\""), "{m}");
        let m = e(json!({"naming_constraints": {"permitted": "x.org"}}));
        assert!(
            m.starts_with("naming_constraints.permitted must be an array"),
            "{m}"
        );
        let m = e(json!({"allowed_entity_types": [1]}));
        assert!(
            m.starts_with("allowed_entity_types must be an array"),
            "{m}"
        );
        assert!(e(json!([])).contains("must be a JSON object"));
        let ok = Constraints::from_json(&json!({"max_path_length": 1, "future": true})).unwrap();
        assert_eq!(ok.max_path_length, Some(1));
    }
}

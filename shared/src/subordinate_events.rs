//! The public history of a subordinate: "OpenID Federation Subordinate Events Endpoint 1.0",
//! draft 01 (3 July 2026). What the `subordinate_events` endpoint signs is made here from the
//! history Pharos records for the Admin API (`subordinate_events` rows), mapped to the draft's
//! event types (§2.3.3) and nothing else: the actor, the free-text message and the kinds of
//! change the draft has no type for (descriptions, additional claims, constraints, triggers)
//! stay internal.
//!
//! | recorded (`type`, status after) | event |
//! |---|---|
//! | `created` active, `status_updated` active | `registration` |
//! | `status_updated` blocked; the subordinate deleted | `revocation` |
//! | `status_updated` inactive | `suspension` |
//! | `jwks_replaced`, `jwk_added`, `jwk_removed`, `jwks_refreshed`, `jwks_updated` | `jwks_update` |
//! | `metadata_updated`, `metadata_deleted` | `metadata_update` |
//! | `policy_updated`, `policy_deleted` | `metadata_policy_update` |
//!
//! §2.3.3: "When a registration event is present, `metadata_update`, `metadata_policy_update`,
//! and `jwks_update` events MUST NOT be provided at the same time, since the Entity
//! registration is assumed to configure the initial configuration about that Entity." Read as
//! "at the same instant": update events at a registration's `iat`, and before the first
//! registration, are left out (the literal reading would hide every key rotation after
//! registration). A subordinate whose history begins before Pharos recorded one (migrated,
//! bulk-loaded) gets its registration at `created_at`.

use serde_json::{Map, Value, json};

/// The JWT `typ` of the response (§2.3.1).
pub const EVENTS_STATEMENT_TYP: &str = "entity-events-statement+jwt";

/// The response's media type (§2.3.1, registered in §4.1.1).
pub const EVENTS_STATEMENT_MEDIA_TYPE: &str = "application/entity-events-statement+jwt";

/// How long a signed answer is valid (`exp`), seconds: the history only grows, and a client
/// should ask again within a day.
pub const LIFETIME: i64 = 86_400;

/// One recorded history row, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// When (`occurred_at`).
    pub at: i64,
    /// What (`type`).
    pub kind: String,
    /// The subordinate's status after the change.
    pub status: Option<String>,
}

/// One public event (§2.3.2.1: `iat`, `event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When it happened.
    pub iat: i64,
    /// The draft's event type.
    pub event: &'static str,
}

const REGISTRATION: &str = "registration";

fn is_update(event: &str) -> bool {
    matches!(
        event,
        "jwks_update" | "metadata_update" | "metadata_policy_update"
    )
}

/// The draft's event for one recorded row, if it has one.
fn event_of(r: &Recorded) -> Option<&'static str> {
    let status = r.status.as_deref();
    Some(match (r.kind.as_str(), status) {
        ("created" | "status_updated", Some("active")) => REGISTRATION,
        ("status_updated", Some("blocked")) => "revocation",
        ("status_updated", Some("inactive")) => "suspension",
        ("jwks_replaced" | "jwk_added" | "jwk_removed" | "jwks_refreshed" | "jwks_updated", _) => {
            "jwks_update"
        }
        ("metadata_updated" | "metadata_deleted", _) => "metadata_update",
        ("policy_updated" | "policy_deleted", _) => "metadata_policy_update",
        _ => return None,
    })
}

/// The public events of a subordinate registered (`created_at`) at `created`, from its
/// recorded history (any order), oldest first.
pub fn public(created: i64, history: &[Recorded]) -> Vec<Event> {
    let mut rows: Vec<&Recorded> = history.iter().collect();
    rows.sort_by_key(|r| r.at);
    let mut events: Vec<Event> = rows
        .into_iter()
        .filter_map(|r| event_of(r).map(|event| Event { iat: r.at, event }))
        .collect();
    let first_registration = events
        .iter()
        .find(|e| e.event == REGISTRATION)
        .map(|e| e.iat);
    let recorded_creation = history.iter().any(|r| r.kind == "created");
    let registered = match first_registration {
        Some(at) => at,
        // History from before Pharos recorded creations (migrated, bulk-loaded): registered
        // when created.
        None if !recorded_creation => {
            events.insert(
                0,
                Event {
                    iat: created,
                    event: REGISTRATION,
                },
            );
            created
        }
        // Created and never admitted (a refused enrollment request): nothing public.
        None => return Vec::new(),
    };
    let registrations: Vec<i64> = events
        .iter()
        .filter(|e| e.event == REGISTRATION)
        .map(|e| e.iat)
        .collect();
    events
        .retain(|e| !is_update(e.event) || (e.iat > registered && !registrations.contains(&e.iat)));
    events.dedup();
    events
}

/// The claims of the signed answer (§2.3.2).
pub fn claims(iss: &str, sub: &str, now: i64, events: &[Event]) -> Map<String, Value> {
    let list: Vec<Value> = events
        .iter()
        .map(|e| json!({"iat": e.iat, "event": e.event}))
        .collect();
    let mut m = Map::new();
    m.insert("iss".into(), json!(iss));
    m.insert("sub".into(), json!(sub));
    m.insert("iat".into(), json!(now));
    m.insert("exp".into(), json!(now + LIFETIME));
    m.insert("federation_registration_events".into(), Value::Array(list));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(at: i64, kind: &str, status: &str) -> Recorded {
        Recorded {
            at,
            kind: kind.into(),
            status: Some(status.into()),
        }
    }

    fn names(events: &[Event]) -> Vec<(i64, &str)> {
        events.iter().map(|e| (e.iat, e.event)).collect()
    }

    #[test]
    fn recorded_history_maps_to_the_drafts_event_types_and_internal_kinds_stay_out() {
        let history = [
            row(30, "status_updated", "blocked"),
            row(10, "created", "active"),
            row(10, "jwk_added", "active"),
            row(12, "claims_updated", "active"),
            row(13, "constraints_updated", "active"),
            row(14, "jwks_update_triggered", "active"),
            row(15, "jwks_refreshed", "active"),
            row(15, "jwk_removed", "active"),
            row(16, "metadata_updated", "active"),
            row(17, "policy_deleted", "active"),
            row(20, "status_updated", "inactive"),
            row(40, "status_updated", "active"),
            row(40, "metadata_updated", "active"),
        ];
        assert_eq!(
            names(&public(10, &history)),
            [
                (10, "registration"),
                (15, "jwks_update"),
                (16, "metadata_update"),
                (17, "metadata_policy_update"),
                (20, "suspension"),
                (30, "revocation"),
                (40, "registration"),
            ],
            "updates at a registration's instant are left out, repeats folded"
        );
    }

    #[test]
    fn pending_subordinates_have_no_registration_until_approved() {
        let pending = [row(5, "created", "pending")];
        assert!(public(5, &pending).is_empty());
        let refused = [
            row(5, "created", "pending"),
            row(6, "jwks_replaced", "pending"),
            row(7, "status_updated", "blocked"),
        ];
        assert!(public(5, &refused).is_empty(), "never registered");
        let approved = [
            row(5, "created", "pending"),
            row(6, "jwks_replaced", "pending"),
            row(9, "status_updated", "active"),
            row(11, "jwks_replaced", "active"),
        ];
        assert_eq!(
            names(&public(5, &approved)),
            [(9, "registration"), (11, "jwks_update")]
        );
    }

    #[test]
    fn history_from_before_pharos_recorded_it_starts_with_a_registration_at_creation() {
        assert_eq!(names(&public(3, &[])), [(3, "registration")]);
        let migrated = [row(50, "jwks_updated", "active")];
        assert_eq!(
            names(&public(3, &migrated)),
            [(3, "registration"), (50, "jwks_update")]
        );
        let c = claims("https://ta", "https://leaf", 99, &public(3, &migrated));
        let mut keys: Vec<&str> = c.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["exp", "federation_registration_events", "iat", "iss", "sub"]
        );
        assert_eq!(
            c["federation_registration_events"][0],
            json!({"iat": 3, "event": "registration"})
        );
        assert_eq!(c["exp"], 99 + LIFETIME);
    }
}

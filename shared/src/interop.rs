//! Interoperation with federations built on drafts before OpenID Federation 1.0 (issue 23;
//! every leniency, its default and the peer that needs it are listed in `docs/interop.md`).
//!
//! The largest deployed federation (SPID/CIE, built on the `spid-cie-oidc` stack) and several
//! wallet ecosystems publish shapes the final text forbids. A resolver that refuses them is
//! useless there, so Pharos accepts those that do not weaken security unless the operator
//! chooses `federation.profile: strict`. The rules reach every chain validator through
//! [`crate::chain::AnchorSpec::interop`], built in one place by the data plane.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

/// What to do with `constraints` in a Trust Anchor's own Entity Configuration, where the final
/// text does not allow them (§3.1.2) but SPID/CIE anchors publish `max_path_length` there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnchorEcConstraints {
    /// Enforce them as if the anchor had put them in its statement about each of its immediate
    /// subordinates: `max_path_length`, `naming_constraints` and `allowed_entity_types` still
    /// protect the chain.
    #[default]
    Apply,
    /// Accept the anchor and disregard them (logged once per anchor).
    Ignore,
    /// Refuse every chain to such an anchor (the specification's letter).
    Refuse,
}

impl AnchorEcConstraints {
    /// The name used in configuration and the Admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "apply",
            Self::Ignore => "ignore",
            Self::Refuse => "refuse",
        }
    }
}

impl fmt::Display for AnchorEcConstraints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AnchorEcConstraints {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "apply" => Ok(Self::Apply),
            "ignore" => Ok(Self::Ignore),
            "refuse" => Ok(Self::Refuse),
            other => Err(format!("{other:?} is not one of apply, ignore, refuse")),
        }
    }
}

/// `federation.profile`: whether the draft-era leniencies are on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Accept the harmless shapes of earlier drafts that deployed peers still send.
    #[default]
    Interop,
    /// The final text only: every leniency off, whatever the other settings say.
    Strict,
}

/// The leniencies in force for chains ending at one Trust Anchor.
///
/// The default is the default configuration (`apply`, draft shapes accepted), so that a
/// validator given an anchor without configuration behaves as an unconfigured Pharos does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Interop {
    /// Constraints in the anchor's own Entity Configuration.
    pub anchor_ec_constraints: AnchorEcConstraints,
    /// Draft-era shapes: Trust Mark types named `id` or `trust_mark_id`, the anchor's
    /// `trust_marks_issuers`, `trust_marks` in Subordinate Statements.
    pub draft_shapes: bool,
}

impl Default for Interop {
    fn default() -> Self {
        Self {
            anchor_ec_constraints: AnchorEcConstraints::Apply,
            draft_shapes: true,
        }
    }
}

impl Interop {
    /// The final text only.
    pub const STRICT: Self = Self {
        anchor_ec_constraints: AnchorEcConstraints::Refuse,
        draft_shapes: false,
    };

    /// The rules for one anchor: the anchor's own override (from its trust anchor record) over
    /// the configured default; `strict` switches everything off, overrides included, so an
    /// operator who chose it can rely on it.
    pub fn for_anchor(
        profile: Profile,
        configured: AnchorEcConstraints,
        anchor_override: Option<AnchorEcConstraints>,
    ) -> Self {
        match profile {
            Profile::Strict => Self::STRICT,
            Profile::Interop => Self {
                anchor_ec_constraints: anchor_override.unwrap_or(configured),
                draft_shapes: true,
            },
        }
    }
}

/// At most this many anchors are remembered as already logged; past it the notice is no
/// longer repeated for new anchors, so hostile anchors named in requests cannot grow memory.
const MAX_NOTED_ANCHORS: usize = 10_000;

/// Log, once per anchor for the life of the process, that its Entity Configuration's
/// `constraints` are being ignored (`anchor_ec_constraints: ignore`): an operator must learn
/// that a protection is off, but not once per request. Returns whether this call logged.
pub fn note_ignored_constraints(anchor: &str, constraints: &serde_json::Value) -> bool {
    static NOTED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let noted = NOTED.get_or_init(|| Mutex::new(HashSet::new()));
    let first = match noted.lock() {
        Ok(mut set) if set.len() < MAX_NOTED_ANCHORS => set.insert(anchor.to_owned()),
        Ok(_) => false,
        Err(poisoned) => poisoned.into_inner().insert(anchor.to_owned()),
    };
    if first {
        tracing::warn!(
            %anchor,
            %constraints,
            "the trust anchor's Entity Configuration carries constraints; ignored (federation.anchor_ec_constraints: ignore)"
        );
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_wins_unless_strict() {
        use AnchorEcConstraints::*;
        let i = Interop::for_anchor(Profile::Interop, Apply, Some(Ignore));
        assert_eq!(i.anchor_ec_constraints, Ignore);
        assert!(i.draft_shapes);
        let i = Interop::for_anchor(Profile::Interop, Refuse, None);
        assert_eq!(i.anchor_ec_constraints, Refuse);
        assert_eq!(
            Interop::for_anchor(Profile::Strict, Apply, Some(Ignore)),
            Interop::STRICT
        );
        assert_eq!(
            Interop::default(),
            Interop::for_anchor(Profile::Interop, Apply, None)
        );
    }

    #[test]
    fn ignored_constraints_are_logged_once_per_anchor() {
        let c = serde_json::json!({"max_path_length": 1});
        assert!(note_ignored_constraints("https://once.example", &c));
        assert!(!note_ignored_constraints("https://once.example", &c));
        assert!(note_ignored_constraints("https://other.example", &c));
    }

    #[test]
    fn names_round_trip() {
        for r in [
            AnchorEcConstraints::Apply,
            AnchorEcConstraints::Ignore,
            AnchorEcConstraints::Refuse,
        ] {
            assert_eq!(r.as_str().parse::<AnchorEcConstraints>(), Ok(r));
            assert_eq!(
                serde_json::to_value(r).ok(),
                Some(serde_json::Value::String(r.to_string()))
            );
        }
        assert!("APPLY".parse::<AnchorEcConstraints>().is_err());
    }
}

//! A warning while an endpoint walks towards any Trust Anchor a caller names
//! (`allow_any_trust_anchor` on `resolve` or `entity_collection`): Pharos then fetches from
//! whatever federation a stranger points it at (issue 31). The operator asked for it, so it
//! is allowed, but it is said in the log at start and whenever the registry changes to it.

use std::sync::Arc;

use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::snapshot::Registry;
use tokio_util::sync::CancellationToken;

use pharos_controlplane::control_plane::ControlPlane;

/// The enabled endpoints of `registry` open to any Trust Anchor.
pub fn open_endpoints(registry: &Registry) -> Vec<EndpointType> {
    registry
        .by_type
        .values()
        .filter(|e| e.path.as_deref().is_some_and(|p| !p.is_empty()))
        .filter(|e| match &e.config {
            EndpointConfig::Resolve(c) => c.allow_any_trust_anchor,
            EndpointConfig::EntityCollection(c) => c.allow_any_trust_anchor,
            _ => false,
        })
        .map(|e| e.kind)
        .collect()
}

/// Warns now if an endpoint is open to any anchor, then again whenever a registry
/// publication opens one, until `stop`.
pub fn spawn(cp: Arc<ControlPlane>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut events = cp.registry_events.subscribe();
        let mut warned: Vec<EndpointType> = Vec::new();
        loop {
            events.borrow_and_update();
            let open = open_endpoints(&cp.snapshot().registry);
            for kind in open.iter().filter(|k| !warned.contains(k)) {
                tracing::warn!(
                    endpoint = %kind,
                    "{kind}: allow_any_trust_anchor is on: any caller can make this service fetch \
                     from any federation it names (a crawler for hire); list the anchors in the \
                     trust anchor repository or allowed_trust_anchors instead"
                );
            }
            warned = open;
            tokio::select! {
                r = events.changed() => if r.is_err() { return },
                _ = stop.cancelled() => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pharos_shared::endpoint::{EntityCollectionConfig, ResolveConfig};
    use pharos_shared::snapshot::EndpointEntry;

    fn entry(kind: EndpointType, config: EndpointConfig, path: Option<&str>) -> EndpointEntry {
        EndpointEntry {
            kind,
            path: path.map(str::to_owned),
            url: None,
            auth_enabled: false,
            auth_trust_anchors: vec![],
            config,
        }
    }

    #[test]
    fn only_enabled_endpoints_that_say_so_are_open() {
        let open_resolve = ResolveConfig {
            allow_any_trust_anchor: true,
            ..ResolveConfig::default()
        };
        let open_collection = EntityCollectionConfig {
            allow_any_trust_anchor: true,
            ..EntityCollectionConfig::default()
        };
        let r = Registry::new(
            vec![
                entry(
                    EndpointType::Resolve,
                    EndpointConfig::Resolve(open_resolve),
                    Some("/resolve"),
                ),
                entry(
                    EndpointType::EntityCollection,
                    EndpointConfig::EntityCollection(open_collection),
                    None,
                ),
            ],
            vec![],
        );
        assert_eq!(open_endpoints(&r), [EndpointType::Resolve]);
        let closed = Registry::new(
            vec![entry(
                EndpointType::Resolve,
                EndpointConfig::Resolve(ResolveConfig::default()),
                Some("/resolve"),
            )],
            vec![],
        );
        assert!(open_endpoints(&closed).is_empty());
    }
}

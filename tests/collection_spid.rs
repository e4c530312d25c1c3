//! Entity collection over the SPID/CIE-style federation of `interop_spid` (issue 23,
//! acceptance 2): its leaves are collected with the Trust Marks they carry in earlier drafts'
//! shapes (`id`, `trust_mark_id`) when the anchor's `trust_marks_issuers` admits them, and a
//! mark from an issuer the anchor does not list is left out.

use serde_json::json;

use crate::collection::{collection, ids_of, set_collection};
use crate::interop_spid::{cryptojwt_available, federations};
use crate::support::{Pharos, TestDb, backends, enc};

#[tokio::test]
async fn a_spid_style_federation_is_collected_with_its_draft_era_marks() {
    if !cryptojwt_available() {
        return;
    }
    let (fed, _, server) = federations().await;
    let ta = fed.id("ta").to_owned();
    for b in backends() {
        let db = TestDb::new(b).await;
        let r = Pharos::start(&db).await;
        set_collection(&r, json!({"allowed_trust_anchors": [ta]})).await;
        let (s, v) = collection(&r, &format!("trust_anchor={}", enc(&ta))).await;
        assert_eq!(s, 200, "{b:?} {v}");
        let mut want: Vec<String> = ["ia", "leaf-old", "leaf-2025", "leaf-direct"]
            .iter()
            .map(|n| fed.id(n).to_owned())
            .collect();
        want.sort();
        assert_eq!(ids_of(&v), want, "{b:?}");
        for (leaf, kind) in [
            ("leaf-old", "public"),
            ("leaf-2025", "private"),
            ("leaf-direct", "public"),
        ] {
            let e = v["entities"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["entity_id"] == fed.id(leaf))
                .unwrap();
            assert_eq!(
                e["trust_marks"],
                json!([{"trust_mark_type": fed.types[kind], "trust_mark": fed.marks[leaf]}]),
                "{b:?} {leaf}"
            );
            assert_eq!(
                e["ui_infos"]["federation_entity"]["organization_name"],
                format!("Relying Party {leaf}")
            );
        }
        let (s, v) = collection(
            &r,
            &format!(
                "trust_anchor={}&trust_mark_type={}",
                enc(&ta),
                enc(&fed.types["private"])
            ),
        )
        .await;
        assert_eq!((s, ids_of(&v)), (200, vec![fed.id("leaf-2025").to_owned()]));
        r.stop().await;
    }
    server.abort();
}

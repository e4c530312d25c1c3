// Every Admin API write the console makes, by the OpenAPI document's path template. `api()`
// refuses any other write (so this list cannot claim less than the console does), and a test
// (`tests/console.rs`) holds it against the document: every documented write is here, under a
// document the console edits whole (a `PUT` on a path above it), or in NOT_IN_CONSOLE with the
// reason. Entries with a field list are hand-written forms: the test checks the list against
// the request body's schema, and `api()` refuses a body with a field outside it. The other
// entries send generated forms (schema.js), whole JSON documents, or no body.
//
// Keep both lists plain JSON (after `const OPERATIONS =` and `export const NOT_IN_CONSOLE =`):
// the test reads them as JSON.

const OPERATIONS = [
  "POST /entities", "PATCH /entities/{entity}", "DELETE /entities/{entity}",
  "PUT /entity-configuration/additional-claims",
  "POST /entity-configuration/authority-hints", "PUT /entity-configuration/authority-hints/{id}", "DELETE /entity-configuration/authority-hints/{id}",
  "POST /entity-configuration/keys", "PUT /entity-configuration/keys/{kid}", "DELETE /entity-configuration/keys/{kid}",
  "PUT /entity-configuration/lifetime", "PUT /entity-configuration/metadata",
  "POST /entity-configuration/trust-marks", "PUT /entity-configuration/trust-marks/{id}", "DELETE /entity-configuration/trust-marks/{id}",
  ["POST /federation-endpoints", ["auth_enabled", "auth_trust_anchors", "config", "path", "type", "url"]],
  ["PUT /federation-endpoints/{type}", ["auth_enabled", "auth_trust_anchors", "config", "path", "type", "url"]],
  ["PUT /keys/rotation", ["enabled", "interval", "key_announcement_lead_time", "key_announcement_lead_time_ec_multiplier", "overlap"]],
  "PUT /kms/alg", "POST /kms/rotate", "PUT /kms/rsa-key-len", "POST /resolver/flush",
  ["POST /subordinates", ["description", "enable_jwks_update", "entity_id", "jwks", "jwks_poll_interval", "registered_entity_types", "status"]],
  "PUT /subordinates/additional-claims", "PUT /subordinates/constraints", "DELETE /subordinates/constraints",
  "PUT /subordinates/lifetime", "PUT /subordinates/metadata-policies", "DELETE /subordinates/metadata-policies",
  "PUT /subordinates/metadata-policy-crit",
  ["PATCH /subordinates/{subordinateID}", ["description", "enable_jwks_update", "jwks_poll_interval", "registered_entity_types"]],
  "DELETE /subordinates/{subordinateID}",
  "PUT /subordinates/{subordinateID}/additional-claims",
  "PUT /subordinates/{subordinateID}/constraints", "DELETE /subordinates/{subordinateID}/constraints",
  "PUT /subordinates/{subordinateID}/jwks", "PUT /subordinates/{subordinateID}/metadata",
  "PUT /subordinates/{subordinateID}/metadata-policies", "DELETE /subordinates/{subordinateID}/metadata-policies",
  "PUT /subordinates/{subordinateID}/status",
  "POST /trust-anchors", "PUT /trust-anchors/{entityID}", "DELETE /trust-anchors/{entityID}",
  "POST /trust-marks/issuance-spec", "PUT /trust-marks/issuance-spec/{trustMarkSpecID}", "DELETE /trust-marks/issuance-spec/{trustMarkSpecID}",
  "POST /trust-marks/issuance-spec/{trustMarkSpecID}/subjects",
  "PUT /trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}", "DELETE /trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}",
  "PUT /trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/status",
  "POST /trust-marks/issuers", "PUT /trust-marks/issuers/{issuerID}", "DELETE /trust-marks/issuers/{issuerID}",
  "POST /trust-marks/owners", "PUT /trust-marks/owners/{ownerID}", "DELETE /trust-marks/owners/{ownerID}",
  "POST /trust-marks/types", "PUT /trust-marks/types/{trustMarkTypeID}", "DELETE /trust-marks/types/{trustMarkTypeID}",
  "POST /users", "PUT /users/{username}", "DELETE /users/{username}"
];
export default OPERATIONS;

export const NOT_IN_CONSOLE = {
  "PUT /subordinates/{subordinateID}": "PATCH edits the same fields; a PUT would reset the ones a form does not show",
  "PUT /kms/rotation": "the same policy as /keys/rotation, under the reference service's other name",
  "PATCH /kms/rotation": "the same policy as /keys/rotation, under the reference service's other name"
};

/** The declared write matching `method` and a called path (query ignored), or null. */
export function declared(method, path) {
  const bare = path.split('?')[0];
  for (const entry of OPERATIONS) {
    const [op, fields] = Array.isArray(entry) ? entry : [entry, null];
    const [m, template] = op.split(' ');
    if (m !== method) continue;
    const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (pattern.test(bare)) return { op, fields };
  }
  return null;
}

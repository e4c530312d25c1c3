//! Snapshots of every wire format a client parses (issue 37): the Entity Configuration, the
//! subordinate statement, the resolve response, the trust mark and its status response, the
//! list, trust mark list and entity collection pages, historical keys, enrollment, trust mark
//! request and key update answers, the answers to an authenticated client, the error bodies of
//! each endpoint (and of client authentication, the body limits, the rate limits and the Admin
//! API), the headers clients read (CORS too), the Admin API's answers to reads of each kind of
//! resource, and its OpenAPI document byte for byte.
//!
//! They were taken before the restructuring of issue 37 and are its proof of wire stability:
//! a refactoring leaves every snapshot under `tests/snapshots/` unchanged. A difference fails
//! the test (insta never passes a mismatch; with `CI` set, as in `.ci/run`, it writes no
//! `.snap.new` either); a deliberate change of a wire format is reviewed as a snapshot diff
//! (`cargo insta review`, or rename the `.snap.new` file).
//!
//! How an answer is shown ([`harness::Wire`]): the status, its headers (but [`harness::UNSHOWN_HEADERS`]), and
//! its body. A signed body is verified with the published keys and shown decoded (protected
//! header and claims; JWTs inside claims too, as `{"jws": …}`); every JSON text is checked to be
//! exactly the compact serialisation of what is shown, so the parsed form stands for the bytes.
//! What differs from run to run is replaced, each replacement checking the type of what it
//! hides: times by their offset from the tests' stopped clock (`[now+86400]`; the Admin API's
//! record times, which come from the system clock, as `[unix time]`), the port of an Entity ID
//! by `[port]`, a key id by the name of its owner, key coordinates, `jti`s, `ETag`s and request
//! ids by placeholders.

mod access;
mod admin_api;
mod enrollment;
mod federation;
mod harness;
mod statements;
mod trust_marks;

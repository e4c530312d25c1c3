//! The command channel from the data plane to the control plane.
//!
//! The data plane never touches the database. A request that changes state checks what it can
//! itself (the form of the request, the snapshot), then sends one typed [`Command`] and awaits
//! the control plane's answer on the command's own `oneshot` reply. The control plane commits
//! to the database and publishes a new snapshot before it replies, so the caller's next request
//! already sees the change.
//!
//! Bounded for real: the data plane only ever `try_send`s, and the control plane admits each
//! command kind against its own limit without waiting (see `pharos_controlplane::commands`).
//! Either refusal reaches the caller at once as [`Refused::Busy`] (503
//! `temporarily_unavailable`), so a flood of requests costs neither queued memory nor tasks.
//! Every command kind has its own error type ([`errors`]); they are turned into federation
//! error responses in one place, [`errors`]' `From` impls.
//!
//! Statistics must not travel here: a refused command fails its request, whereas a statistics
//! record should be dropped, never cost a request; they get a bounded buffer of their own.
//!
//! A new state-changing feature is a new variant with its own error type; nothing else
//! changes.

pub mod errors;
pub mod refusals;

use std::sync::Arc;

use pharos_shared::checks::Checker;
use pharos_shared::checks::Verdict;
use pharos_shared::collection::Collection;
use pharos_shared::key_update::SignedJwks;
use pharos_shared::trust_mark_issuer::IssuedMark;
use tokio::sync::{mpsc, oneshot};

pub use errors::{
    CheckError, CollectError, CommandError, EnrollError, HistoryError, JtiError, MarkRequestError,
    PushError, RecordMarkError, Refused, TriggerError,
};
pub use pharos_shared::subordinate_events::Recorded;
pub use refusals::Refusals;

/// Commands that may sit in the channel before the control plane's dispatcher takes them.
/// The dispatcher never waits while taking a command (it admits or refuses at once), so the
/// queue only absorbs scheduling jitter; when it is full the sender is refused, not parked.
pub const CHANNEL_CAPACITY: usize = 1024;

/// Where a command's answer goes.
pub type Reply<T, E> = oneshot::Sender<Result<T, E>>;

/// A state change requested by the data plane.
#[derive(Debug)]
pub enum Command {
    /// Re-fetch a subordinate's keys from its Entity Configuration now (jwks_update_trigger).
    /// The data plane has checked that `sub` is an active or pending subordinate.
    JwksUpdateTrigger {
        /// The subordinate's entity identifier.
        sub: String,
        /// The authenticated client, recorded as the event's actor (`None` when the endpoint
        /// does not authenticate).
        actor: Option<String>,
        /// `changed` = whether the stored keys changed.
        reply: Reply<bool, TriggerError>,
    },
    /// Replace a subordinate's keys with a pushed signed JWK Set (jwks_update). The data plane
    /// has checked the token's form ([`pharos_shared::key_update::parse_signed_jwks`]); the
    /// control plane checks its signature against the keys stored in the database, under the
    /// writer lock, so a check and a concurrent key change cannot interleave.
    JwksUpdate {
        /// The token and what it claims, already checked for form.
        pushed: SignedJwks,
        /// Replies once the new keys are committed and published.
        reply: Reply<(), PushError>,
    },
    /// Remember a client assertion's `jti` until `expires_at` (db replay store). Answers
    /// `true` when the `jti` was new, `false` when it had been used before.
    RecordJti {
        /// The assertion identifier (namespaced by issuer by the caller).
        jti: String,
        /// Unix seconds after which the record may be deleted.
        expires_at: i64,
        /// `true` = first use.
        reply: Reply<bool, JtiError>,
    },
    /// Record a trust mark instance the data plane has just signed (trust_mark endpoint), when
    /// its snapshot held none to hand out again. The JWT is handed out only after this
    /// replies, so every mark a client holds is one the status and listing endpoints know.
    /// Under the writer lock the control plane decides again on the stored subject (a subject
    /// blocked meanwhile gets nothing) and, when the subject holds a mark that may be handed
    /// out again (a concurrent request recorded it), answers that one and stores nothing.
    RecordIssuedTrustMark {
        /// The instance (`jti`, type, subject, `iat`, `exp`, the signed mark).
        mark: IssuedMark,
        /// Whether the spec's checker passed the subject for this request.
        checked: bool,
        /// The mark to hand out, once it is committed and published.
        reply: Reply<Arc<str>, RecordMarkError>,
    },
    /// Store `sub` as a pending subject of `trust_mark_type` (trust_mark_request). The data
    /// plane has checked that the type is issued here and that the subject is neither
    /// entitled, blocked nor pending in its snapshot; the control plane decides again under
    /// the writer lock.
    RequestTrustMark {
        /// The trust mark type.
        trust_mark_type: String,
        /// The entity asking for (or asked for) the mark.
        sub: String,
        /// The authenticated client, recorded as the event's actor (`None` without client
        /// authentication).
        actor: Option<String>,
        /// What the control plane found.
        reply: Reply<MarkRequestOutcome, MarkRequestError>,
    },
    /// Run the checker of `trust_mark_type`'s issuance spec for `sub` (trust mark endpoint,
    /// modes `check_only`, `db_or_check`, `db_and_check`). The control plane fetches and
    /// verifies `sub`'s Entity Configuration, runs the checker and answers its verdict
    /// (reused for the spec's `check_cache_ttl`). Changes nothing: a command because the
    /// data plane does no outbound work on behalf of checkers (operator services, programs).
    CheckEligibility {
        /// The trust mark type.
        trust_mark_type: String,
        /// The entity asking for the mark.
        sub: String,
        /// The checker's verdict.
        reply: Reply<Verdict, CheckError>,
    },
    /// Enroll `sub` (enroll endpoint) or store its request (enroll_request endpoint). The data
    /// plane has checked the request's form and found `sub` neither active, pending nor
    /// blocked in its snapshot; the control plane fetches and verifies the entity's
    /// configuration, runs the check and decides again under the writer lock.
    Enroll {
        /// What is asked.
        enrollment: Enrollment,
        /// The entity's standing once the control plane is done.
        reply: Reply<EnrollOutcome, EnrollError>,
    },
    /// Collect the Entities under `trust_anchor` now (entity_collection without a periodic
    /// collector). Changes no state: it travels here because the collector, its bounds and
    /// its short-lived cache belong to the control plane's background work.
    CollectEntities {
        /// The Trust Anchor to walk from (the data plane has checked it is allowed).
        trust_anchor: String,
        /// The collection (possibly cached for a short while).
        reply: CollectReply,
    },
    /// Read a subordinate's recorded history (subordinate_events). Changes no state: the
    /// history is in the database only (the snapshot would carry every subordinate's rows).
    /// `None` when there is no such subordinate.
    SubordinateHistory {
        /// The subordinate's entity identifier (the data plane has checked that it is one).
        sub: String,
        /// Its `created_at` and its history rows.
        reply: Reply<Option<(i64, Vec<Recorded>)>, HistoryError>,
    },
}

/// Which endpoint an [`Command::Enroll`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EnrollMode {
    /// enroll: the check decides; a pass stores the entity `active`.
    Enroll,
    /// enroll_request: the entity is stored `pending` for an administrator to decide.
    Request,
}

/// An enrollment as the data plane read it from the request and the endpoint's configuration.
#[derive(Debug, Clone)]
pub struct Enrollment {
    /// Which endpoint.
    pub mode: EnrollMode,
    /// The entity identifier to enroll (an http(s) URL, checked).
    pub sub: String,
    /// The request's `entity_type` values (empty = take them from the entity's metadata).
    pub entity_types: Vec<String>,
    /// The endpoint's entity check (`Checker::None` when none is configured).
    pub checker: Checker,
    /// `Some(jwks_poll_interval)` when the endpoint enrolls with key polling on.
    pub poll: Option<i64>,
    /// Who asks, as recorded in the history: the authenticated client, else the endpoint.
    pub actor: String,
}

/// The answer to [`Command::Enroll`]: the entity's status afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnrollOutcome {
    /// Enrolled (now or before): the fetch endpoint serves its statement.
    Active,
    /// Waiting for an administrator.
    Pending,
}

/// The answer to [`Command::CollectEntities`].
pub type CollectReply = Reply<Arc<Collection>, CollectError>;

/// The answer to [`Command::RequestTrustMark`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkRequestOutcome {
    /// The subject is (now) pending an administrator's decision.
    Pending,
    /// An administrator approved it meanwhile: it is entitled already.
    AlreadyEntitled,
}

/// The data plane's end of the channel.
///
/// Commands travel boxed: the channel allocates its slots in blocks of 32, and with commands
/// of a few hundred bytes inline every hosted entity's idle channel held 8 kB (a thousand
/// entities, 8 MB; BENCHMARKS.md, "Hosted entities"). A box per command is nothing beside
/// the database write each command makes.
#[derive(Debug, Clone)]
pub struct Commands {
    tx: mpsc::Sender<Box<Command>>,
    /// Busy refusals of the commands sent here, for `/metrics`.
    refusals: Arc<Refusals>,
}

/// The control plane's end of the channel.
#[derive(Debug)]
pub struct CommandQueue(mpsc::Receiver<Box<Command>>);

impl CommandQueue {
    /// The next command; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<Command> {
        self.0.recv().await.map(|c| *c)
    }

    /// Whether no command is waiting.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The next command if one is waiting.
    pub fn try_recv(&mut self) -> Result<Command, mpsc::error::TryRecvError> {
        self.0.try_recv().map(|c| *c)
    }
}

impl Commands {
    /// A connected pair: the sender for the data plane, the receiver for the control plane.
    pub fn channel() -> (Self, CommandQueue) {
        Self::with_capacity(CHANNEL_CAPACITY)
    }

    /// A pair with another queue length (tests fill it).
    pub fn with_capacity(capacity: usize) -> (Self, CommandQueue) {
        Self::counting(capacity, Arc::default())
    }

    fn counting(capacity: usize, refusals: Arc<Refusals>) -> (Self, CommandQueue) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Self { tx, refusals }, CommandQueue(rx))
    }

    /// A new channel (another hosted entity's) whose refusals count with this one's, so that
    /// `/metrics` has one series per command kind, not per entity.
    pub fn sibling(&self) -> (Self, CommandQueue) {
        Self::counting(CHANNEL_CAPACITY, self.refusals.clone())
    }

    /// Busy refusals of the commands sent through this channel and its siblings.
    pub fn refusals(&self) -> &Arc<Refusals> {
        &self.refusals
    }

    /// Sends the command built by `make` around a fresh reply channel and waits for the
    /// answer. A full queue is [`Refused::Busy`] at once (never a wait for room); a control
    /// plane that has stopped, or dropped the command, is [`Refused::Stopped`], never a hang.
    /// Either side's [`Refused::Busy`] is counted in [`Self::refusals`].
    pub async fn call<T, E: CommandError>(
        &self,
        make: impl FnOnce(Reply<T, E>) -> Command,
    ) -> Result<T, E> {
        let (tx, rx) = oneshot::channel();
        let command = make(tx);
        let kind = command.kind();
        if let Err(e) = self.tx.try_send(Box::new(command)) {
            let refused = match e {
                mpsc::error::TrySendError::Full(_) => Refused::Busy,
                mpsc::error::TrySendError::Closed(_) => Refused::Stopped,
            };
            if refused == Refused::Busy {
                self.refusals.count(kind);
            }
            return Err(refused.into());
        }
        let answer = rx.await.map_err(|_| Refused::Stopped)?;
        if let Err(e) = &answer
            && e.refused() == Some(Refused::Busy)
        {
            self.refusals.count(kind);
        }
        answer
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn record(reply: Reply<bool, JtiError>) -> Command {
        Command::RecordJti {
            jti: "x".into(),
            expires_at: 0,
            reply,
        }
    }

    #[tokio::test]
    async fn a_stopped_control_plane_is_an_error_not_a_hang() {
        let (c, rx) = Commands::channel();
        drop(rx);
        let e = c.call(record).await.unwrap_err();
        assert_eq!(e, JtiError::Refused(Refused::Stopped));
    }

    #[tokio::test]
    async fn a_full_queue_is_refused_at_once() {
        let (c, mut rx) = Commands::with_capacity(1);
        // The first command takes the only slot and is never answered while the second is
        // sent: the second must not wait for room.
        let first = tokio::spawn({
            let c = c.clone();
            async move { c.call(record).await }
        });
        while rx.is_empty() {
            tokio::task::yield_now().await;
        }
        let e = c.call(record).await.unwrap_err();
        assert_eq!(e, JtiError::Refused(Refused::Busy));
        assert_eq!(c.refusals().get(refusals::Kind::RecordJti), 1);
        // Answering the first still works.
        match rx.recv().await.unwrap() {
            Command::RecordJti { reply, .. } => reply.send(Ok(true)).unwrap(),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(first.await.unwrap(), Ok(true));
    }

    #[tokio::test]
    async fn a_refusal_by_the_control_plane_counts_like_a_full_queue_and_siblings_share() {
        let (c, mut rx) = Commands::channel();
        let (sibling, mut sibling_rx) = c.sibling();
        let refuse = |rx: &mut CommandQueue| {
            let cmd = rx.try_recv();
            async move {
                match cmd {
                    Ok(Command::RecordJti { reply, .. }) => {
                        reply.send(Err(Refused::Busy.into())).unwrap()
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        };
        let call = tokio::spawn({
            let c = c.clone();
            async move { c.call(record).await }
        });
        while rx.is_empty() {
            tokio::task::yield_now().await;
        }
        refuse(&mut rx).await;
        assert_eq!(call.await.unwrap(), Err(JtiError::Refused(Refused::Busy)));
        let call = tokio::spawn(async move { sibling.call(record).await });
        while sibling_rx.is_empty() {
            tokio::task::yield_now().await;
        }
        refuse(&mut sibling_rx).await;
        assert!(call.await.unwrap().is_err());
        assert_eq!(c.refusals().get(refusals::Kind::RecordJti), 2);
        // Other failures are not refusals.
        drop(rx);
        assert_eq!(
            c.call(record).await,
            Err(JtiError::Refused(Refused::Stopped))
        );
        assert_eq!(c.refusals().get(refusals::Kind::RecordJti), 2);
    }

    #[tokio::test]
    async fn a_dropped_command_is_stopped() {
        let (c, mut rx) = Commands::channel();
        let call = tokio::spawn(async move { c.call(record).await });
        drop(rx.recv().await.unwrap());
        assert_eq!(
            call.await.unwrap().unwrap_err(),
            JtiError::Refused(Refused::Stopped)
        );
    }
}

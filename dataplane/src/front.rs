//! The public port's one entry: requests that have a finished answer (the Entity
//! Configuration, a cached fetch or resolve) are answered here, before axum's routing; every
//! other request goes to the router unchanged.
//!
//! A warm answer is a few thousand instructions; routing it through axum cost about as much
//! again (two route-table lookups, since the federation endpoints are the router's fallback, a
//! path-parameter extension allocated for the fallback's catch-all, a boxed route future, the
//! method router and a boxed handler future). Here it is a comparison of the path, the
//! registry lookup the dispatcher makes anyway, and a response that is ready at once.
//!
//! Precedence is the router's: the Entity Configuration's path is reserved for it, and a path
//! under one of the `foreign` prefixes (health checks, the Admin API on the same port) always
//! goes to the router, so an endpoint registered there is shadowed as before. With CORS on the
//! public port nothing is answered here (the CORS layer wraps the routes).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::future::RouteFuture;
use pin_project_lite::pin_project;
use tower::Service;

use crate::DataPlane;

/// The path of our Entity Configuration (a fixed route).
pub const ENTITY_CONFIGURATION_PATH: &str = "/.well-known/openid-federation";

/// A router, with the data plane's ready answers in front of it when configured.
#[derive(Clone, Debug)]
pub struct Front {
    router: Router,
    fast: Option<Fast>,
    /// The other hosted entities: a request for one of them goes to its own front.
    hosts: Option<crate::hosts::Hosts>,
    /// The connection's peer (see [`Front::connected`]).
    peer: Option<SocketAddr>,
}

#[derive(Clone, Debug)]
struct Fast {
    dp: Arc<DataPlane>,
    foreign: Arc<[String]>,
}

impl Front {
    /// Just `router` (listeners without federation routes).
    pub fn new(router: Router) -> Self {
        Self {
            router,
            fast: None,
            hosts: None,
            peer: None,
        }
    }

    /// This front, handing requests for the other hosted entities to theirs (see
    /// [`crate::hosts`]); what no hosted entity owns stays here.
    pub fn hosting(self, hosts: crate::hosts::Hosts) -> Self {
        Self {
            hosts: Some(hosts),
            ..self
        }
    }

    /// This entry for one connection from `peer`: requests it routes carry `peer` as their
    /// `ConnectInfo` (for the handlers that read the client's address: rate limits, the Admin
    /// API's loopback rule). Ready answers need no address, so they are spared inserting it
    /// (an allocation of the request's extension map, and its release).
    pub fn connected(&self, peer: SocketAddr) -> Self {
        Self {
            peer: Some(peer),
            ..self.clone()
        }
    }

    /// `router`, whose federation routes are [`crate::router`]'s for `dp`, with their ready
    /// answers given here first; paths starting with one of `foreign` are left to the router.
    pub fn with_ready_answers(router: Router, dp: Arc<DataPlane>, foreign: &[&str]) -> Self {
        let foreign = foreign.iter().map(|p| (*p).to_owned()).collect();
        Self {
            router,
            fast: Some(Fast { dp, foreign }),
            hosts: None,
            peer: None,
        }
    }
}

impl Fast {
    /// The ready answer of an anonymous GET, if there is one.
    fn answer(&self, req: &Request) -> Option<Response> {
        if req.method() != Method::GET {
            return None;
        }
        let path = req.uri().path();
        if path == ENTITY_CONFIGURATION_PATH {
            return crate::entity_configuration::ready(&self.dp, req);
        }
        if self.foreign.iter().any(|p| path.starts_with(p.as_str())) {
            return None;
        }
        crate::dispatch::ready(&self.dp, req)
    }
}

impl Service<Request> for Front {
    type Response = Response;
    type Error = Infallible;
    type Future = FrontFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        if let Some((entity, front, uri)) =
            self.hosts.as_ref().and_then(|h| h.route(&req, self.peer))
        {
            *req.uri_mut() = uri;
            let mut front = match self.peer {
                Some(peer) => front.connected(peer),
                None => front,
            };
            let mut answer = front.call(req);
            answer.served_by = Some(entity);
            return answer;
        }
        if let Some(response) = self.fast.as_ref().and_then(|f| f.answer(&req)) {
            return FrontFuture {
                ready: Some(response),
                routed: None,
                served_by: None,
            };
        }
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(ConnectInfo(peer));
        }
        FrontFuture {
            ready: None,
            routed: Some(self.router.call(req)),
            served_by: None,
        }
    }
}

pin_project! {
    /// Future of [`Front`]: a ready answer, or the router's.
    pub struct FrontFuture {
        // Answered in [`Front::call`].
        ready: Option<Response>,
        // The router's answer, when there was no ready one.
        #[pin]
        routed: Option<RouteFuture<Infallible>>,
        // The hosted entity answering, other than the default one (marked on the response).
        served_by: Option<pharos_shared::hosted::EntityNo>,
    }
}

impl Future for FrontFuture {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let served_by = *this.served_by;
        let mark = |mut r: Response| {
            if let Some(entity) = served_by {
                r.extensions_mut().insert(crate::hosts::ServedBy(entity));
            }
            r
        };
        if let Some(routed) = this.routed.as_pin_mut() {
            return routed.poll(cx).map(|r| r.map(mark));
        }
        // Polled again after it answered: a misuse of the future, answered as such.
        let ready = this.ready.take().unwrap_or_else(|| {
            crate::error::FedError::server_error("response already taken").into_response()
        });
        Poll::Ready(Ok(mark(ready)))
    }
}

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
use crate::hosts::Found;
use crate::stats::Served;
use crate::stats::metrics::KnownSeries;

/// The path of our Entity Configuration (a fixed route).
pub const ENTITY_CONFIGURATION_PATH: &str = "/.well-known/openid-federation";

/// A router, with the data plane's ready answers in front of it when configured (those first:
/// `repr(C)` keeps them where a hosted entity's route starts, see [`HostedRoute`]).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Front {
    fast: Option<Fast>,
    router: Router,
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

    /// The data plane whose ready answers this front gives, if it gives them on every path
    /// (none under a `foreign` prefix, which a hosted entity's front never has).
    pub(crate) fn ready_everywhere(&self) -> Option<&Arc<DataPlane>> {
        self.fast
            .as_ref()
            .filter(|f| f.foreign.is_empty())
            .map(|f| &f.dp)
    }

    /// A request for the hosted entity of `route`, `rest` being its path with the entity's
    /// taken off: the entity's ready answer when it has one (its Entity Configuration and
    /// cached fetches from the publication point the route keeps, others found from `rest`;
    /// the request is not rebuilt, and nothing of the entity's is cloned), else its router,
    /// with the entity's path taken off the URI.
    fn hosted(found: Found<'_>, req: &Request, rest: &str) -> Hosted {
        let route = found.route;
        let front = route.front();
        // The kept answers stand in for the front's own, with the series they count into.
        if req.method() == Method::GET {
            let path = req.uri().path();
            if rest == ENTITY_CONFIGURATION_PATH {
                if let Some(kept) = found.configuration() {
                    // The clock first: reading it waits for every load before it (the vDSO's
                    // `lfence`), and the series is read to be waited for beside the point's.
                    let now = kept.clock.now();
                    let series = kept.series(path, || route.kept.as_ref()?.series.as_ref());
                    if let Some(series) = &series {
                        series.touch();
                    }
                    if let Some(response) =
                        crate::entity_configuration::kept(&kept.reader, now, req)
                    {
                        return Hosted::Answered(response, series);
                    }
                }
            } else if let Some(kept) = &route.kept {
                let now = kept.configuration.clock.now();
                // Found (and read) early when known; found on the first answer otherwise.
                let found_early = kept.series.as_ref().and_then(|s| s.fetch_found(rest));
                if let Some(series) = &found_early {
                    series.touch();
                }
                let snap = kept.configuration.reader.load();
                if let Some(view) = crate::dispatch::fetch_view(&snap, req, rest) {
                    return match crate::dispatch::ready_fetch(&kept.caches, &snap, view, req, now) {
                        Some(response) => {
                            let series = found_early
                                .or_else(|| kept.series.as_ref()?.fetch(route.entity, path, rest));
                            Hosted::Answered(response, series)
                        }
                        None => Hosted::Routed(front.router.clone(), route.prefix_len()),
                    };
                }
            }
        }
        if let Some(response) = front.fast.as_ref().and_then(|f| f.answer(req, rest)) {
            return Hosted::Answered(response, None);
        }
        Hosted::Routed(front.router.clone(), route.prefix_len())
    }
}

/// What a hosted entity makes of a request (see [`Front::hosted`]).
enum Hosted {
    /// Its ready answer, and the series it counts into when the route keeps it.
    Answered(Response, Option<KnownSeries>),
    /// Its router, and the length of its path to take off the request's.
    Routed(Router, usize),
}

impl Fast {
    /// The ready answer of an anonymous GET to `path` (the request's own, or what is left of
    /// it once a hosted entity's path is taken off), if there is one.
    fn answer(&self, req: &Request, path: &str) -> Option<Response> {
        if req.method() != Method::GET {
            return None;
        }
        if path == ENTITY_CONFIGURATION_PATH {
            return crate::entity_configuration::ready(&self.dp, req);
        }
        if self.foreign.iter().any(|p| path.starts_with(p.as_str())) {
            return None;
        }
        crate::dispatch::ready(&self.dp, req, path)
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
        if let Some(hosts) = &self.hosts
            && let Some((entity, hosted)) = hosts.with_route(&req, self.peer, |found, rest| {
                (found.entity(), Self::hosted(found, &req, rest))
            })
        {
            let mut answer = match hosted {
                Hosted::Answered(response, series) => {
                    let mut answer = FrontFuture::answered(response);
                    answer.served.series = series;
                    answer
                }
                // The rest of a valid path is a valid path: stripping cannot fail, and is
                // answered as the unknown path it would be if it did.
                Hosted::Routed(mut router, prefix) => {
                    match crate::hosts::strip(req.uri(), prefix) {
                        Some(uri) => {
                            *req.uri_mut() = uri;
                            if let Some(peer) = self.peer {
                                req.extensions_mut().insert(ConnectInfo(peer));
                            }
                            FrontFuture::routed(router.call(req))
                        }
                        None => FrontFuture::answered(
                            crate::error::FedError::not_found("no such path").into_response(),
                        ),
                    }
                }
            };
            answer.served.entity = Some(entity);
            return answer;
        }
        if let Some(response) = self
            .fast
            .as_ref()
            .and_then(|f| f.answer(&req, req.uri().path()))
        {
            return FrontFuture::answered(response);
        }
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(ConnectInfo(peer));
        }
        FrontFuture::routed(self.router.call(req))
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
        // Who answered (see `ServedBy`).
        served: Served,
    }
}

impl FrontFuture {
    /// The future of an answer made at once.
    fn answered(response: Response) -> Self {
        Self {
            ready: Some(response),
            routed: None,
            served: Served::default(),
        }
    }

    /// The future of the router's answer.
    fn routed(routed: RouteFuture<Infallible>) -> Self {
        Self {
            ready: None,
            routed: Some(routed),
            served: Served::default(),
        }
    }
}

impl crate::hosts::ServedBy for FrontFuture {
    fn served_by(&self) -> Served {
        self.served
    }
}

impl Future for FrontFuture {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(routed) = this.routed.as_pin_mut() {
            return routed.poll(cx);
        }
        // Polled again after it answered: a misuse of the future, answered as such.
        let ready = this.ready.take().unwrap_or_else(|| {
            crate::error::FedError::server_error("response already taken").into_response()
        });
        Poll::Ready(Ok(ready))
    }
}

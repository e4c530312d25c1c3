//! `pharos setup`: a first-run wizard that turns a freshly started Pharos into an anchor, an
//! intermediate, a leaf, a resolver or a trust mark issuer, through the public Admin API of the
//! running instance (the same calls `pharos admin` makes; nothing privileged).
//!
//! Interactive on a terminal (dialoguer prompts for whatever no flag gave); with
//! `--non-interactive`, or without a terminal, every answer comes from flags and a missing
//! one is a usage error (exit 64). The first admin user is created first, while the bootstrap
//! rule still allows it (a loopback client, or `--bootstrap-token` from the service's log),
//! and every later call is made as that user.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use pharos_shared::policy::WriteRules;
use reqwest::Method;
use serde_json::{Value, json};

use pharos_controlplane::admin::password_policy;

use crate::cli_admin::client::{Body, Client, entity_jwks, one_line};
use crate::cli_admin::commands::{default_path, enable_endpoint};
use crate::cli_admin::{Connection, Failure};

/// The roles the wizard knows, each with its default endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// A Trust Anchor: issues statements about its subordinates (fetch, list).
    Anchor,
    /// An Intermediate: a superior below an anchor (fetch, list; authority hints).
    Intermediate,
    /// A leaf entity: publishes its Entity Configuration only (authority hints).
    Leaf,
    /// A resolver: resolves trust chains to the anchors it trusts (resolve).
    Resolver,
    /// A trust mark issuer (trust_mark, trust_mark_status, trust_mark_listing; authority hints).
    TrustMarkIssuer,
}

impl Role {
    const ALL: [Role; 5] = [
        Role::Anchor,
        Role::Intermediate,
        Role::Leaf,
        Role::Resolver,
        Role::TrustMarkIssuer,
    ];

    fn label(self) -> &'static str {
        match self {
            Role::Anchor => "trust anchor",
            Role::Intermediate => "intermediate",
            Role::Leaf => "leaf",
            Role::Resolver => "resolver",
            Role::TrustMarkIssuer => "trust mark issuer",
        }
    }

    /// The label with its indefinite article: "a trust anchor", "an intermediate".
    fn with_article(self) -> String {
        let label = self.label();
        let article = if label.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {label}")
    }

    /// The endpoint types the role serves by default.
    pub fn endpoints(self) -> &'static [&'static str] {
        match self {
            Role::Anchor | Role::Intermediate => &["fetch", "list"],
            Role::Leaf => &[],
            Role::Resolver => &["resolve"],
            Role::TrustMarkIssuer => &["trust_mark", "trust_mark_status", "trust_mark_listing"],
        }
    }

    /// Whether the role sits below a superior (and so needs authority hints).
    fn has_superiors(self) -> bool {
        matches!(
            self,
            Role::Intermediate | Role::Leaf | Role::TrustMarkIssuer
        )
    }
}

/// Endpoint types offered in the interactive selection.
const OFFERED_ENDPOINTS: [&str; 8] = [
    "fetch",
    "list",
    "resolve",
    "trust_mark",
    "trust_mark_status",
    "trust_mark_listing",
    "enroll",
    "historical_keys",
];

/// `pharos setup` arguments.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// Where the running instance's Admin API is (and existing admin credentials, if any).
    #[command(flatten)]
    pub connection: Connection,
    /// Bootstrap token printed in the service's log at start (for a remote first run).
    #[arg(long, env = "PHAROS_BOOTSTRAP_TOKEN", hide_env_values = true)]
    pub bootstrap_token: Option<String>,
    /// The entity identifier the instance must have (checked; it is set in its config file).
    #[arg(long)]
    pub entity_id: Option<String>,
    /// The role of this entity.
    #[arg(long, value_enum)]
    pub role: Option<Role>,
    /// Endpoint types to serve (repeatable; default: the role's).
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    /// federation_entity organization_name.
    #[arg(long)]
    pub organization_name: Option<String>,
    /// federation_entity homepage_uri.
    #[arg(long)]
    pub homepage_uri: Option<String>,
    /// federation_entity contacts (repeatable).
    #[arg(long = "contact")]
    pub contacts: Vec<String>,
    /// Superiors to publish as authority_hints (repeatable).
    #[arg(long = "authority-hint")]
    pub authority_hints: Vec<String>,
    /// Trust Anchors to trust, their keys taken from their Entity Configurations (repeatable;
    /// a resolver resolves to these).
    #[arg(long = "trust-anchor")]
    pub trust_anchors: Vec<String>,
    /// User name of the first admin user.
    #[arg(long)]
    pub admin_user: Option<String>,
    /// Password of the first admin user (prefer the environment variable).
    #[arg(long, env = "PHAROS_SETUP_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// Never prompt: every answer comes from flags (also without a terminal).
    #[arg(long)]
    pub non_interactive: bool,
    /// Another entity this deployment hosts, as `ENTITY_ID=ROLE` (repeatable): it is created
    /// (with keys of its own) and set up like this one, with the role's default endpoints and
    /// the same `federation_entity` metadata, authority hints and trust anchors.
    #[arg(long = "host", value_name = "ENTITY_ID=ROLE")]
    pub hosted: Vec<String>,
}

/// `ENTITY_ID=ROLE` of `--host`.
fn parse_hosted(arg: &str) -> Result<(String, Role), Failure> {
    let (id, role) = arg.rsplit_once('=').ok_or_else(|| {
        Failure::Usage(format!(
            "--host {arg}: give ENTITY_ID=ROLE, e.g. https://fed.example.org/edu=intermediate"
        ))
    })?;
    let role = Role::from_str(role, true)
        .map_err(|_| Failure::Usage(format!("--host {arg}: unknown role {role:?}")))?;
    Ok((id.to_owned(), role))
}

/// Runs the wizard and returns its exit status (those of `pharos admin`).
pub fn run(args: SetupArgs) -> ExitCode {
    let Some(rt) = crate::cli_admin::runtime() else {
        return ExitCode::FAILURE;
    };
    let interactive = !args.non_interactive && std::io::stdin().is_terminal();
    match rt.block_on(wizard(args, interactive)) {
        Ok(summary) => {
            print!("{summary}");
            ExitCode::SUCCESS
        }
        Err(f) => f.report(),
    }
}

/// The answers the wizard works from.
#[derive(Debug)]
struct Plan {
    role: Role,
    endpoints: Vec<String>,
    federation_entity: Option<Value>,
    authority_hints: Vec<String>,
    trust_anchors: Vec<String>,
    admin: Option<(String, String)>,
    /// Other entities to host, each with its role (`--host`).
    hosted: Vec<(String, Role)>,
}

async fn wizard(args: SetupArgs, interactive: bool) -> Result<String, Failure> {
    let mut target = args.connection.target()?;
    target.bootstrap_token = args.bootstrap_token.clone();
    let mut client = Client::new(target.clone())?;
    let served = served_entity_id(&client).await?;
    if let (Some(want), Some(have)) = (&args.entity_id, &served)
        && want.trim_end_matches('/') != have.trim_end_matches('/')
    {
        return Err(Failure::Usage(format!(
            "the instance at {} is {have}, not {want}: set entity_id in its configuration file and restart it",
            client.base()
        )));
    }
    let plan = if interactive {
        ask(&args, served.as_deref())?
    } else {
        from_flags(&args)?
    };

    // Everything is built and checked (with the Admin API's own checks) and every remote
    // read is made before the first write, so a mistake in any answer changes nothing.
    let us = served.as_deref().unwrap_or_default();
    let writes = Writes::build(&plan, us)?;
    let mut anchors = Vec::new();
    for ta in &plan.trust_anchors {
        let body = json!({ "entity_id": ta, "jwks": entity_jwks(&client, ta).await? });
        check_trust_anchor(&body)?;
        anchors.push((ta.clone(), body));
    }

    let mut done = Done::default();
    if let Some((user, password)) = &plan.admin {
        client = done.step(create_admin(client, user, password).await)?;
        done.did(format!("admin user {user}"));
    }
    let lines = set_up(&client, &writes, &anchors, us, None, &mut done).await?;
    let mut out = summary(&plan, served.as_deref(), &lines);
    for (id, role, body, own) in &writes.hosted {
        let r = client
            .call(Method::POST, "/entities", Body::Json(body.clone()))
            .await;
        done.step(tolerate_conflict(r))?;
        done.did(format!("hosted entity {id}"));
        let mut target = target.clone();
        target.entity = Some(id.clone());
        let mut scoped = Client::new(target)?;
        if let Some((user, password)) = &plan.admin {
            scoped.login(user, password);
        }
        let lines = set_up(&scoped, own, &anchors, id, Some(id), &mut done).await?;
        out.push_str(&format!("hosting {id} as {}\n", role.with_article()));
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    Ok(out)
}

/// One entity's writes through `client` (scoped to it): metadata, authority hints, trust
/// anchors, endpoints; the summary lines of its endpoints (published under `us`). `hosted`
/// names another hosted entity in what was done.
async fn set_up(
    client: &Client,
    writes: &Writes,
    anchors: &[(String, Value)],
    us: &str,
    hosted: Option<&str>,
    done: &mut Done,
) -> Result<Vec<String>, Failure> {
    let of = hosted.map(|h| format!(" of {h}")).unwrap_or_default();
    if let Some(fe) = &writes.federation_entity {
        let path = "/entity-configuration/metadata/federation_entity";
        done.step(client.call(Method::PUT, path, Body::Json(fe.clone())).await)?;
        done.did(format!("federation_entity metadata{of}"));
    }
    for (hint, body) in &writes.hints {
        let r = client
            .call(
                Method::POST,
                "/entity-configuration/authority-hints",
                Body::Json(body.clone()),
            )
            .await;
        done.step(tolerate_conflict(r))?;
        done.did(format!("authority hint {hint}{of}"));
    }
    for (ta, body) in anchors {
        let r = client
            .call(Method::POST, "/trust-anchors", Body::Json(body.clone()))
            .await;
        done.step(tolerate_conflict(r))?;
        done.did(format!("trust anchor {ta}{of}"));
    }
    let mut lines = Vec::new();
    for (kind, path, config) in &writes.endpoints {
        done.step(enable_endpoint(client, kind, path, config.clone(), false).await)?;
        done.did(format!("endpoint {kind} at {path}{of}"));
        lines.push(format!("  {kind:<18} {}{path}", us.trim_end_matches('/')));
    }
    Ok(lines)
}

/// The wizard's writes, built from the plan and checked as the Admin API checks them.
struct Writes {
    federation_entity: Option<Value>,
    /// Each superior with its request body.
    hints: Vec<(String, Value)>,
    /// Each endpoint: type, path, configuration.
    endpoints: Vec<(String, String, Option<Value>)>,
    /// Each other entity to host: identifier, role, `POST /entities` body, its own writes.
    hosted: Vec<(String, Role, Value, Writes)>,
}

impl Writes {
    /// Every body of the plan, or the first one the Admin API would refuse (exit 64: the
    /// answers are wrong, nothing was written).
    fn build(plan: &Plan, us: &str) -> Result<Self, Failure> {
        use pharos_controlplane::admin::documents::{self, Doc};
        use pharos_controlplane::admin::endpoints::{EndpointInput, parse_type};
        use pharos_controlplane::admin::entity_configuration::hints::HintInput;
        use pharos_controlplane::admin::users::NewUser;

        if let Some((user, password)) = &plan.admin {
            let body = json!({ "username": user, "password": password });
            checked::<NewUser, _>("admin user", body, |b| b.check().map(drop))?;
        }
        if let Some(fe) = &plan.federation_entity {
            let doc = json!({ "federation_entity": fe });
            // The server's `federation.accept` lists are not known here: the strict default.
            let rules = WriteRules {
                crit: &[],
                entity_types: &[],
                operators: &[],
            };
            documents::check(Doc::Metadata, &doc, &rules).map_err(|e| refused("metadata", e))?;
        }
        let mut hints = Vec::new();
        for hint in &plan.authority_hints {
            let body = json!({ "entity_id": hint });
            checked::<HintInput, _>("--authority-hint", body.clone(), |b| {
                b.check_new(us).map(drop)
            })?;
            hints.push((hint.clone(), body));
        }
        for ta in &plan.trust_anchors {
            pharos_controlplane::admin::extract::entity_id("--trust-anchor", ta)
                .map_err(|e| refused("--trust-anchor", e))?;
        }
        let mut endpoints = Vec::new();
        for kind in &plan.endpoints {
            let parsed = parse_type(kind).map_err(|e| refused("--endpoint", e))?;
            let config = match kind.as_str() {
                "resolve" if !plan.trust_anchors.is_empty() => {
                    Some(json!({ "allowed_trust_anchors": plan.trust_anchors }))
                }
                _ => None,
            };
            let path = default_path(kind);
            let body = json!({ "type": kind, "path": path, "config": config });
            checked::<EndpointInput, _>(&format!("endpoint {kind}"), body, |b| {
                b.check(parsed).map(drop)
            })?;
            if endpoints.iter().any(|(k, _, _)| k == kind) {
                return Err(Failure::Usage(format!("endpoint {kind} is given twice")));
            }
            endpoints.push((kind.clone(), path, config));
        }
        let mut hosted = Vec::new();
        for (id, role) in &plan.hosted {
            use pharos_controlplane::admin::entities::EntityInput;
            let body = json!({ "entity_id": id });
            checked::<EntityInput, _>("--host", body.clone(), |b| b.check().map(drop))?;
            let one = Plan {
                role: *role,
                endpoints: endpoints_of(*role, &[]),
                federation_entity: plan.federation_entity.clone(),
                authority_hints: plan.authority_hints.clone(),
                trust_anchors: plan.trust_anchors.clone(),
                admin: None,
                hosted: Vec::new(),
            };
            hosted.push((id.clone(), *role, body, Self::build(&one, id)?));
        }
        Ok(Self {
            federation_entity: plan.federation_entity.clone(),
            hints,
            endpoints,
            hosted,
        })
    }
}

/// A trust anchor's body (with the keys just fetched) as `POST /trust-anchors` checks it.
fn check_trust_anchor(body: &Value) -> Result<(), Failure> {
    use pharos_controlplane::admin::trust_anchors::TrustAnchorInput;
    checked::<TrustAnchorInput, _>("--trust-anchor", body.clone(), |b| {
        b.check_new(&[]).map(drop)
    })
}

/// `body` parsed as the route's input type and run through the route's check.
fn checked<T: serde::de::DeserializeOwned, F>(
    what: &str,
    body: Value,
    check: F,
) -> Result<(), Failure>
where
    F: FnOnce(T) -> pharos_controlplane::admin::error::ApiResult<()>,
{
    let input: T =
        serde_json::from_value(body).map_err(|e| Failure::Usage(format!("{what}: {e}")))?;
    check(input).map_err(|e| refused(what, e))
}

fn refused(what: &str, e: pharos_controlplane::admin::error::ApiError) -> Failure {
    Failure::Usage(one_line(&format!("{what}: {e} (nothing was changed)")))
}

/// What the wizard has written so far, so that a failure half-way says exactly that and how
/// to go on: every step tolerates what a previous run made, so the same command again
/// finishes the work.
#[derive(Default)]
struct Done(Vec<String>);

impl Done {
    fn did(&mut self, what: String) {
        self.0.push(what);
    }

    /// `r`, or its failure with what was done before it.
    fn step<T>(&self, r: Result<T, Failure>) -> Result<T, Failure> {
        r.map_err(|f| self.explain(f))
    }

    fn explain(&self, f: Failure) -> Failure {
        let tail = if self.0.is_empty() {
            " (nothing was changed)".to_owned()
        } else {
            format!(
                "; already set up: {}; fix the cause and run the same command again (it keeps \
                 what exists and does the rest)",
                self.0.join(", ")
            )
        };
        match f {
            Failure::Usage(m) => Failure::Usage(format!("{m}{tail}")),
            Failure::Refused { status, message } => Failure::Refused {
                status,
                message: format!("{message}{tail}"),
            },
            Failure::Unreachable(m) => Failure::Unreachable(format!("{m}{tail}")),
        }
    }
}

fn summary(plan: &Plan, entity: Option<&str>, endpoints: &[String]) -> String {
    let mut s = format!(
        "configured {} as {}\n",
        entity.unwrap_or("the instance"),
        plan.role.with_article()
    );
    if endpoints.is_empty() {
        s.push_str("endpoints: none\n");
    } else {
        s.push_str("endpoints:\n");
        for l in endpoints {
            s.push_str(l);
            s.push('\n');
        }
    }
    for h in &plan.authority_hints {
        s.push_str(&format!("authority hint: {h}\n"));
    }
    for t in &plan.trust_anchors {
        s.push_str(&format!("trust anchor: {t}\n"));
    }
    if let Some((u, _)) = &plan.admin {
        s.push_str(&format!("admin user: {u}\n"));
    }
    if plan.role.has_superiors() {
        s.push_str("next: give each superior your keys (pharos admin keys list --json)\n");
    }
    s
}

/// A conflict (the record exists already) is not a failure of a re-run wizard.
fn tolerate_conflict(r: Result<Value, Failure>) -> Result<(), Failure> {
    match r {
        Ok(_) | Err(Failure::Refused { status: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The instance's entity identifier: from the Admin API when it answers, else from the public
/// Entity Configuration on the same base URL; `None` when neither says.
async fn served_entity_id(c: &Client) -> Result<Option<String>, Failure> {
    match c.get("/entity-configuration").await {
        Ok(v) => return Ok(v["sub"].as_str().map(str::to_owned)),
        Err(Failure::Unreachable(m)) => return Err(Failure::Unreachable(m)),
        Err(_) => {}
    }
    let (status, v) = c
        .raw(Method::GET, "/.well-known/openid-federation", Body::None)
        .await?;
    if !status.is_success() {
        return Ok(None);
    }
    let token = v.as_str().unwrap_or("");
    Ok(pharos_shared::jose::decode_unverified(token.trim())
        .ok()
        .and_then(|d| d.claims["sub"].as_str().map(str::to_owned)))
}

/// Creates the first admin user and returns the client logged in as it. On a re-run the user
/// exists: the API then wants credentials, and the user's own are tried (a conflict with them
/// means the user exists and its password works).
async fn create_admin(mut c: Client, user: &str, password: &str) -> Result<Client, Failure> {
    let body = || Body::Json(json!({ "username": user, "password": password }));
    let mut r = c.call(Method::POST, "/users", body()).await;
    if matches!(r, Err(Failure::Refused { status: 401, .. })) && !c.has_credentials() {
        c.login(user, password);
        r = c.call(Method::POST, "/users", body()).await;
    }
    match r {
        Ok(_) | Err(Failure::Refused { status: 409, .. }) => {
            c.login(user, password);
            Ok(c)
        }
        Err(Failure::Refused {
            status: 401 | 403,
            message,
        }) => Err(Failure::Refused {
            status: 401,
            message: one_line(&format!(
                "cannot create the admin user ({message}): before the first user the Admin API admits only local clients or --bootstrap-token, after it --user/--password of an admin"
            )),
        }),
        Err(e) => Err(e),
    }
}

/// The plan from flags alone (non-interactive).
fn from_flags(args: &SetupArgs) -> Result<Plan, Failure> {
    let role = args
        .role
        .ok_or_else(|| Failure::Usage("--role is required with --non-interactive".into()))?;
    let admin = match (&args.admin_user, &args.admin_password) {
        (Some(u), Some(p)) => {
            // Refused before anything is written, not after the wizard's first steps.
            password_policy::check(u, p).map_err(Failure::Usage)?;
            Some((u.clone(), p.clone()))
        }
        (Some(_), None) => {
            return Err(Failure::Usage(
                "--admin-user needs --admin-password (or PHAROS_SETUP_ADMIN_PASSWORD)".into(),
            ));
        }
        (None, _) if args.connection.user.is_some() => None,
        (None, _) => {
            return Err(Failure::Usage(
                "--admin-user is required (or --user of an existing admin)".into(),
            ));
        }
    };
    if role == Role::Resolver && args.trust_anchors.is_empty() {
        return Err(Failure::Usage(
            "a resolver needs at least one --trust-anchor".into(),
        ));
    }
    Ok(Plan {
        role,
        endpoints: endpoints_of(role, &args.endpoints),
        federation_entity: SetupArgsView::from(args).federation_entity(),
        authority_hints: args.authority_hints.clone(),
        trust_anchors: args.trust_anchors.clone(),
        admin,
        hosted: args
            .hosted
            .iter()
            .map(|h| parse_hosted(h))
            .collect::<Result<_, _>>()?,
    })
}

fn endpoints_of(role: Role, given: &[String]) -> Vec<String> {
    if given.is_empty() {
        role.endpoints().iter().map(|s| (*s).to_owned()).collect()
    } else {
        given.to_vec()
    }
}

/// The plan from flags, with prompts for whatever they left open.
fn ask(args: &SetupArgs, served: Option<&str>) -> Result<Plan, Failure> {
    use dialoguer::{Confirm, Input, MultiSelect, Password, Select};
    let io = |e: dialoguer::Error| Failure::Usage(format!("prompt failed: {e}"));
    // The password policy is checked at the prompt, so a weak password is asked again.
    let new_password = |u: &str| -> Result<String, Failure> {
        let user = u.to_owned();
        Password::new()
            .with_prompt(format!(
                "Password for {u} (at least {} characters)",
                password_policy::MIN_CHARS
            ))
            .validate_with(move |p: &String| password_policy::check(&user, p))
            .with_confirmation("Repeat it", "the passwords differ")
            .interact()
            .map_err(io)
    };
    if let Some(id) = served {
        println!("Pharos instance: {id}");
    }
    let role = match args.role {
        Some(r) => r,
        None => {
            let labels: Vec<&str> = Role::ALL.iter().map(|r| r.label()).collect();
            let i = Select::new()
                .with_prompt("Role of this entity")
                .items(&labels)
                .default(0)
                .interact()
                .map_err(io)?;
            Role::ALL[i]
        }
    };
    let endpoints = if args.endpoints.is_empty() {
        let defaults: Vec<bool> = OFFERED_ENDPOINTS
            .iter()
            .map(|e| role.endpoints().contains(e))
            .collect();
        let chosen = MultiSelect::new()
            .with_prompt("Endpoints to serve (space toggles, enter accepts)")
            .items(OFFERED_ENDPOINTS)
            .defaults(&defaults)
            .interact()
            .map_err(io)?;
        chosen
            .into_iter()
            .map(|i| OFFERED_ENDPOINTS[i].to_owned())
            .collect()
    } else {
        args.endpoints.clone()
    };
    let text = |prompt: &str, given: &Option<String>| -> Result<Option<String>, Failure> {
        if given.is_some() {
            return Ok(given.clone());
        }
        let s: String = Input::new()
            .with_prompt(prompt)
            .allow_empty(true)
            .interact_text()
            .map_err(io)?;
        Ok((!s.trim().is_empty()).then(|| s.trim().to_owned()))
    };
    let list = |prompt: &str, given: &[String]| -> Result<Vec<String>, Failure> {
        if !given.is_empty() {
            return Ok(given.to_vec());
        }
        let s: String = Input::new()
            .with_prompt(prompt)
            .allow_empty(true)
            .interact_text()
            .map_err(io)?;
        Ok(s.split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    };
    let organization_name = text("Organization name (empty: none)", &args.organization_name)?;
    let authority_hints = if role.has_superiors() {
        list(
            "Superiors' entity identifiers (authority_hints, comma-separated)",
            &args.authority_hints,
        )?
    } else {
        args.authority_hints.clone()
    };
    let trust_anchors = if role == Role::Resolver || endpoints.iter().any(|e| e == "resolve") {
        list(
            "Trust Anchors to resolve to (entity identifiers, comma-separated)",
            &args.trust_anchors,
        )?
    } else {
        args.trust_anchors.clone()
    };
    let admin = match &args.admin_user {
        Some(u) => {
            let p = match &args.admin_password {
                Some(p) => {
                    password_policy::check(u, p).map_err(Failure::Usage)?;
                    p.clone()
                }
                None => new_password(u)?,
            };
            Some((u.clone(), p))
        }
        None if args.connection.user.is_some() => None,
        None => {
            let u: String = Input::new()
                .with_prompt("First admin user name")
                .default("admin".into())
                .interact_text()
                .map_err(io)?;
            let p = new_password(&u)?;
            Some((u, p))
        }
    };
    let mut fe_args = SetupArgsView::from(args);
    fe_args.organization_name = organization_name;
    let plan = Plan {
        role,
        endpoints,
        federation_entity: fe_args.federation_entity(),
        authority_hints,
        trust_anchors,
        admin,
        hosted: args
            .hosted
            .iter()
            .map(|h| parse_hosted(h))
            .collect::<Result<_, _>>()?,
    };
    let go = Confirm::new()
        .with_prompt(format!(
            "Configure this instance as {} with endpoints [{}]?",
            plan.role.with_article(),
            plan.endpoints.join(", ")
        ))
        .default(true)
        .interact()
        .map_err(io)?;
    if !go {
        return Err(Failure::Usage("setup cancelled".into()));
    }
    Ok(plan)
}

/// The metadata members of the arguments, so prompts can fill them in.
struct SetupArgsView {
    organization_name: Option<String>,
    homepage_uri: Option<String>,
    contacts: Vec<String>,
}

impl From<&SetupArgs> for SetupArgsView {
    fn from(a: &SetupArgs) -> Self {
        Self {
            organization_name: a.organization_name.clone(),
            homepage_uri: a.homepage_uri.clone(),
            contacts: a.contacts.clone(),
        }
    }
}

impl SetupArgsView {
    fn federation_entity(&self) -> Option<Value> {
        let mut fe = serde_json::Map::new();
        if let Some(o) = &self.organization_name {
            fe.insert("organization_name".into(), json!(o));
        }
        if let Some(h) = &self.homepage_uri {
            fe.insert("homepage_uri".into(), json!(h));
        }
        if !self.contacts.is_empty() {
            fe.insert("contacts".into(), json!(self.contacts));
        }
        (!fe.is_empty()).then_some(Value::Object(fe))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: SetupArgs,
    }

    fn parse(args: &[&str]) -> SetupArgs {
        T::try_parse_from(std::iter::once("setup").chain(args.iter().copied()))
            .unwrap()
            .a
    }

    #[test]
    fn roles_take_their_article() {
        assert_eq!(Role::Intermediate.with_article(), "an intermediate");
        assert_eq!(Role::Anchor.with_article(), "a trust anchor");
        assert_eq!(Role::TrustMarkIssuer.with_article(), "a trust mark issuer");
    }

    #[test]
    fn an_anchor_serves_fetch_and_list_by_default() {
        let a = parse(&[
            "--role",
            "anchor",
            "--admin-user",
            "root",
            "--admin-password",
            "a long passphrase",
        ]);
        let p = from_flags(&a).unwrap();
        assert_eq!(p.endpoints, ["fetch", "list"]);
        assert_eq!(p.admin, Some(("root".into(), "a long passphrase".into())));
        assert!(p.federation_entity.is_none());
    }

    /// Every endpoint the wizard offers or a role serves is a type the Admin API knows (the
    /// trust mark issuer's `trust_mark_list` was not, and stopped the wizard half-way).
    #[test]
    fn every_offered_endpoint_is_a_known_type() {
        let by_role = Role::ALL.iter().flat_map(|r| r.endpoints().iter());
        for e in OFFERED_ENDPOINTS.iter().chain(by_role) {
            assert!(
                pharos_shared::endpoint::EndpointType::parse(e).is_some(),
                "{e}"
            );
        }
    }

    /// A wrong answer is found before anything is written, by the Admin API's own checks.
    #[test]
    fn every_body_is_checked_before_the_first_write() {
        let mut a = parse(&[
            "--role",
            "anchor",
            "--admin-user",
            "root",
            "--admin-password",
            "a long admin password",
            "--endpoint",
            "trust_mark_list",
        ]);
        let plan = from_flags(&a).unwrap();
        let Err(Failure::Usage(m)) = Writes::build(&plan, "https://ta.example.org") else {
            panic!("an unknown endpoint type passed");
        };
        assert!(
            m.contains("trust_mark_list") && m.contains("nothing was changed"),
            "{m}"
        );
        a.endpoints.clear();
        a.authority_hints = vec!["https://ta.example.org".into()];
        let plan = from_flags(&a).unwrap();
        let Err(Failure::Usage(m)) = Writes::build(&plan, "https://ta.example.org") else {
            panic!("an entity that is its own authority passed");
        };
        assert!(m.contains("--authority-hint"), "{m}");
        a.authority_hints = vec!["not a url".into()];
        assert!(Writes::build(&from_flags(&a).unwrap(), "https://x.example").is_err());
        a.authority_hints.clear();
        let w = Writes::build(&from_flags(&a).unwrap(), "https://x.example").unwrap();
        assert_eq!(w.endpoints.len(), 2);
    }

    #[test]
    fn non_interactive_runs_need_a_role_and_an_admin() {
        assert!(matches!(
            from_flags(&parse(&["--admin-user", "a", "--admin-password", "b"])),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(
            from_flags(&parse(&["--role", "leaf"])),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(
            from_flags(&parse(&["--role", "resolver", "--user", "x"])),
            Err(Failure::Usage(_))
        ));
    }

    #[test]
    fn a_weak_admin_password_is_refused_before_anything_is_written() {
        let a = parse(&[
            "--role",
            "anchor",
            "--admin-user",
            "root",
            "--admin-password",
            "1",
        ]);
        assert!(matches!(
            from_flags(&a),
            Err(Failure::Usage(m)) if m.starts_with("password: at least 12 characters")
        ));
    }
}

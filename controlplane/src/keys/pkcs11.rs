//! `signing.kms: pkcs11`: keys generated and used inside a PKCS#11 token (an HSM, or SoftHSM2
//! in tests), through the `cryptoki` crate.
//!
//! The private key is created on the token as sensitive and non-extractable and is only ever
//! addressed by its label; Pharos hands the token a digest and gets a signature back (C_Sign).
//! Only the public key leaves the token, to be published. ECDSA (ES256, ES384, ES512) is
//! supported: PKCS#11 returns ECDSA signatures as r||s, which is already the JWS form.

use std::fmt;
use std::sync::{Arc, Mutex};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use pharos_shared::config::Pkcs11Settings;
use pharos_shared::jose::{Algorithm, Jwk, Signer, thumbprint};
use serde_json::json;
use sha2::Digest;

use crate::error::{Error, Result};

fn err(what: &str, e: impl fmt::Display) -> Error {
    Error::Internal(format!("pkcs11: {what}: {e}"))
}

/// Curve parameters per algorithm: DER OID of the curve, JWK `crv`, coordinate size.
fn curve(alg: Algorithm) -> Result<(&'static [u8], &'static str, usize)> {
    match alg {
        Algorithm::ES256 => Ok((&[6, 8, 42, 134, 72, 206, 61, 3, 1, 7], "P-256", 32)),
        Algorithm::ES384 => Ok((&[6, 5, 43, 129, 4, 0, 34], "P-384", 48)),
        Algorithm::ES512 => Ok((&[6, 5, 43, 129, 4, 0, 35], "P-521", 66)),
        other => Err(Error::TokenAlgorithm(other)),
    }
}

/// An open, logged-in token. One session, serialised by a mutex: signing is short and a
/// token's sessions are a scarce resource.
pub struct Token {
    _ctx: Pkcs11,
    session: Mutex<Session>,
    label_prefix: String,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("label_prefix", &self.label_prefix)
            .finish_non_exhaustive()
    }
}

impl Token {
    /// Loads the module, finds the token (slot, label or serial) and logs in.
    pub fn open(cfg: &Pkcs11Settings) -> Result<Arc<Self>> {
        let ctx = Pkcs11::new(&cfg.module_path).map_err(|e| err("cannot load module", e))?;
        match ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
            Ok(()) => {}
            Err(cryptoki::error::Error::Pkcs11(
                cryptoki::error::RvError::CryptokiAlreadyInitialized,
                _,
            )) => {}
            Err(e) => return Err(err("C_Initialize", e)),
        }
        let slot = find_slot(&ctx, cfg)?;
        let session = ctx
            .open_rw_session(slot)
            .map_err(|e| err("open session", e))?;
        if !cfg.no_login {
            let pin = AuthPin::from(cfg.pin.expose());
            match session.login(UserType::User, Some(&pin)) {
                Ok(()) => {}
                Err(cryptoki::error::Error::Pkcs11(
                    cryptoki::error::RvError::UserAlreadyLoggedIn,
                    _,
                )) => {}
                Err(e) => return Err(err("login", e)),
            }
        }
        Ok(Arc::new(Self {
            _ctx: ctx,
            session: Mutex::new(session),
            label_prefix: cfg.label_prefix.clone(),
        }))
    }

    fn session(&self) -> Result<std::sync::MutexGuard<'_, Session>> {
        self.session
            .lock()
            .map_err(|_| Error::Internal("pkcs11 session lock poisoned".into()))
    }

    /// Label of the token objects of key `kid`.
    pub fn label(&self, kid: &str) -> String {
        format!("{}{kid}", self.label_prefix)
    }

    /// Generates a key pair on the token and returns `(kid, public JWK)`.
    pub fn generate(&self, alg: Algorithm) -> Result<(String, Jwk)> {
        let (oid, crv, size) = curve(alg)?;
        let session = self.session()?;
        let tmp_label = self.label(&format!("pending-{}", std::process::id()));
        let public = [
            Attribute::Token(true),
            Attribute::Verify(true),
            Attribute::EcParams(oid.to_vec()),
            Attribute::Label(tmp_label.clone().into_bytes()),
        ];
        let private = [
            Attribute::Token(true),
            Attribute::Private(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::Sign(true),
            Attribute::Label(tmp_label.into_bytes()),
        ];
        let (pub_h, priv_h) = session
            .generate_key_pair(&Mechanism::EccKeyPairGen, &public, &private)
            .map_err(|e| err("generate key pair", e))?;
        let point = match session
            .get_attributes(pub_h, &[AttributeType::EcPoint])
            .map_err(|e| err("read EC point", e))?
            .pop()
        {
            Some(Attribute::EcPoint(p)) => p,
            _ => return Err(err("read EC point", "attribute missing")),
        };
        let (x, y) = decode_point(&point, size)?;
        let mut jwk = Jwk::new();
        jwk.insert("kty".into(), json!("EC"));
        jwk.insert("crv".into(), json!(crv));
        jwk.insert("x".into(), json!(b64(x)));
        jwk.insert("y".into(), json!(b64(y)));
        let kid = thumbprint(&jwk)?;
        jwk.insert("use".into(), json!("sig"));
        jwk.insert("alg".into(), json!(alg.as_str()));
        jwk.insert("kid".into(), json!(kid));
        let named = [
            Attribute::Label(self.label(&kid).into_bytes()),
            Attribute::Id(kid.clone().into_bytes()),
        ];
        for h in [pub_h, priv_h] {
            session
                .update_attributes(h, &named)
                .map_err(|e| err("label key", e))?;
        }
        Ok((kid, jwk))
    }

    fn private_key(&self, session: &Session, kid: &str) -> Result<ObjectHandle> {
        let template = [
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC),
            Attribute::Label(self.label(kid).into_bytes()),
        ];
        session
            .find_objects(&template)
            .map_err(|e| err("find key", e))?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal(format!("pkcs11: no private key {kid} on the token")))
    }
}

fn find_slot(ctx: &Pkcs11, cfg: &Pkcs11Settings) -> Result<Slot> {
    if let Some(id) = cfg.token_slot {
        return Slot::try_from(id).map_err(|e| err("token_slot", e));
    }
    let slots = ctx
        .get_slots_with_token()
        .map_err(|e| err("list slots", e))?;
    for slot in slots {
        let info = ctx.get_token_info(slot).map_err(|e| err("token info", e))?;
        let label_ok = cfg.token_label.is_empty() || info.label().trim() == cfg.token_label;
        let serial_ok =
            cfg.token_serial.is_empty() || info.serial_number().trim() == cfg.token_serial;
        if label_ok && serial_ok {
            return Ok(slot);
        }
    }
    Err(Error::Internal(format!(
        "pkcs11: no token with label {:?} / serial {:?}",
        cfg.token_label, cfg.token_serial
    )))
}

/// Splits CKA_EC_POINT (a DER OCTET STRING around `04 || X || Y`, or the bare point, as some
/// modules return it) into its coordinates.
fn decode_point(der: &[u8], size: usize) -> Result<(&[u8], &[u8])> {
    let point = match der {
        [0x04, 0x81, len, rest @ ..] | [0x04, len, rest @ ..] if rest.len() == *len as usize => {
            rest
        }
        _ => der,
    };
    match point {
        [0x04, xy @ ..] if xy.len() == 2 * size => Ok(xy.split_at(size)),
        _ => Err(err("EC point", "not an uncompressed point of the curve")),
    }
}

fn b64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

/// A [`Signer`] whose private key stays on the token.
#[derive(Debug)]
pub struct TokenSigner {
    token: Arc<Token>,
    alg: Algorithm,
    kid: String,
    public_jwk: Jwk,
}

impl TokenSigner {
    /// A signer for the stored key `kid` (checked to exist on the token now, not at first use).
    pub fn new(token: Arc<Token>, alg: Algorithm, kid: &str, public_jwk: Jwk) -> Result<Self> {
        curve(alg)?;
        token.private_key(&*token.session()?, kid)?;
        Ok(Self {
            token,
            alg,
            kid: kid.to_string(),
            public_jwk,
        })
    }
}

impl Signer for TokenSigner {
    fn alg(&self) -> Algorithm {
        self.alg
    }

    fn kid(&self) -> &str {
        &self.kid
    }

    fn public_jwk(&self) -> &Jwk {
        &self.public_jwk
    }

    fn sign_bytes(&self, signing_input: &[u8]) -> pharos_shared::Result<Vec<u8>> {
        let digest = match self.alg {
            Algorithm::ES384 => sha2::Sha384::digest(signing_input).to_vec(),
            Algorithm::ES512 => sha2::Sha512::digest(signing_input).to_vec(),
            _ => sha2::Sha256::digest(signing_input).to_vec(),
        };
        let fail = |e: String| pharos_shared::Error::Jws(format!("pkcs11 signing failed: {e}"));
        let session = self.token.session().map_err(|e| fail(e.to_string()))?;
        let key = self
            .token
            .private_key(&session, &self.kid)
            .map_err(|e| fail(e.to_string()))?;
        session
            .sign(&Mechanism::Ecdsa, key, &digest)
            .map_err(|e| fail(e.to_string()))
    }

    /// The token's one session is serialised by a std mutex and each signature is a round
    /// trip to the device: never on an async worker.
    fn is_blocking(&self) -> bool {
        true
    }
}

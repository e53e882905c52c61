//! Who may call a worker: Restate's request identity. A Restate server configured
//! with a private key (`request-identity-private-key-pem-file`) signs every request
//! to a deployment with a short-lived EdDSA JWT whose audience is the request path;
//! a worker given the matching public keys (`publickeyv1_…`, `--identity-key` or
//! `DANDORI_RESTATE_IDENTITY_KEYS`) answers only requests that carry a valid one.
//!
//! The SDK checks the JWT with `jsonwebtoken`, whose RustCrypto and aws-lc backends
//! (RSA, ECDSA, HMAC: some forty crates) are left out; this module installs the
//! one algorithm Restate uses, Ed25519 verification, as its crypto provider.

use std::sync::Once;

use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};

use crate::error::DistributedError;
use crate::protocol::RESTATE_IDENTITY_INVALID;

/// The environment variable with the identity keys of a worker (comma- or
/// whitespace-separated), beside `--identity-key`.
pub const IDENTITY_KEYS_ENV: &str = "DANDORI_RESTATE_IDENTITY_KEYS";

struct Ed25519(VerifyingKey);

impl jsonwebtoken::signature::Verifier<Vec<u8>> for Ed25519 {
    fn verify(
        &self,
        msg: &[u8],
        signature: &Vec<u8>,
    ) -> Result<(), jsonwebtoken::signature::Error> {
        // ed25519-dalek's errors are of another `signature` major version than
        // jsonwebtoken's: a failed check is an opaque error either way.
        let signature =
            Signature::from_slice(signature).map_err(|_| jsonwebtoken::signature::Error::new())?;
        self.0
            .verify(msg, &signature)
            .map_err(|_| jsonwebtoken::signature::Error::new())
    }
}

impl JwtVerifier for Ed25519 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::EdDSA
    }
}

fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    if *alg != Algorithm::EdDSA || key.family() != AlgorithmFamily::Ed {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let bytes: &[u8; 32] = key
        .as_bytes()
        .get(..32)
        .and_then(|b| b.try_into().ok())
        .ok_or(ErrorKind::InvalidEddsaKey)?;
    let key = VerifyingKey::from_bytes(bytes).map_err(|_| ErrorKind::InvalidEddsaKey)?;
    Ok(Box::new(Ed25519(key)))
}

fn no_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    Err(ErrorKind::InvalidAlgorithm.into())
}

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: verifier,
    jwk_utils: JwkUtils::new_unimplemented(),
};

/// Installs the Ed25519 verifier as the process's JWT crypto provider (once).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = PROVIDER.install_default();
    });
}

/// The keys of `--identity-key` and [`IDENTITY_KEYS_ENV`], each checked.
pub fn keys(flags: &[String], env: Option<&str>) -> Result<Vec<String>, DistributedError> {
    let mut keys: Vec<String> = flags.to_vec();
    keys.extend(
        env.unwrap_or_default()
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|k| !k.is_empty())
            .map(str::to_string),
    );
    for k in &keys {
        // The SDK checks the same when the endpoint is built; this says which key.
        let ok = k.strip_prefix("publickeyv1_").is_some_and(|rest| {
            rest.len() >= 40 && rest.chars().all(|c| c.is_ascii_alphanumeric())
        });
        if !ok {
            return Err(DistributedError::Invalid {
                reason_code: RESTATE_IDENTITY_INVALID,
                message: format!(
                    "identity key {k:?} is not a Restate public key (publickeyv1_ followed by the base58 of an Ed25519 public key)"
                ),
            });
        }
    }
    Ok(keys)
}

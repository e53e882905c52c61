//! The forms a known secret takes when it is written encoded: an agent that puts
//! `base64(token)` or the token reversed into a file has still leaked it. The masker
//! hides these forms and the pre-commit scan refuses them, like the value itself.
//!
//! * **base64**, standard and URL-safe alphabets, in all three alignments: the
//!   secret may start at any byte of a longer encoded text, so for each offset
//!   (0, 1, 2 bytes before it) the form is the run of characters that depend on the
//!   secret's bytes only — present whatever surrounds the secret;
//! * **hex**, lower and upper case;
//! * **URL-encoded** (percent-encoding of every byte outside the unreserved set),
//!   when that differs from the value;
//! * **reversed**.

/// One encoded form of a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// `base64`, `base64url`, `hex`, `url`, `reversed`.
    pub encoding: &'static str,
    pub form: String,
}

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The encoded forms of `secret` that are at least `min_len` characters long, each
/// once (a form equal to the secret or to another form is left out).
pub fn encoded_forms(secret: &str, min_len: usize) -> Vec<Encoded> {
    let bytes = secret.as_bytes();
    let mut out: Vec<Encoded> = Vec::new();
    let mut push = |encoding: &'static str, form: String| {
        if form.chars().count() >= min_len && form != secret && !out.iter().any(|e| e.form == form)
        {
            out.push(Encoded { encoding, form });
        }
    };
    for offset in 0..3 {
        push("base64", base64_fragment(bytes, offset, STD));
        push("base64url", base64_fragment(bytes, offset, URL_SAFE));
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    push("hex", hex.to_ascii_uppercase());
    push("hex", hex);
    let url = url_encode(bytes);
    push("url", url.to_ascii_lowercase());
    push("url", url);
    push("reversed", secret.chars().rev().collect());
    out
}

/// The base64 characters (no padding) of `offset` unknown bytes followed by
/// `bytes` and unknown bytes, that are determined by `bytes` alone.
fn base64_fragment(bytes: &[u8], offset: usize, alphabet: &[u8; 64]) -> String {
    let mut data = vec![0u8; offset];
    data.extend_from_slice(bytes);
    let first_bit = offset * 8;
    let end_bit = data.len() * 8;
    let bit = |i: usize| -> u8 {
        data.get(i / 8)
            .map_or(0, |byte| (byte >> (7 - (i % 8))) & 1)
    };
    let mut out = String::new();
    // Character k covers bits [6k, 6k + 6).
    for k in first_bit.div_ceil(6).. {
        let start = 6 * k;
        if start + 6 > end_bit {
            break;
        }
        let index = (0..6).fold(0usize, |acc, j| (acc << 1) | usize::from(bit(start + j)));
        out.push(char::from(alphabet[index]));
    }
    out
}

/// Percent-encoding of every byte outside `A-Z a-z 0-9 - . _ ~`, upper-case hex.
fn url_encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Standard base64 of a whole text, for the checks.
    fn b64(data: &[u8]) -> String {
        let mut out = String::new();
        for chunk in data.chunks(3) {
            let n = chunk.len();
            let v = (u32::from(chunk[0]) << 16)
                | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
                | u32::from(*chunk.get(2).unwrap_or(&0));
            for i in 0..4 {
                if i <= n {
                    out.push(char::from(STD[((v >> (18 - 6 * i)) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn every_alignment_is_found_inside_a_longer_encoding() {
        let secret = "ghp_S3cretTokenValue0123456789abcdef";
        let forms = encoded_forms(secret, 6);
        for prefix in ["", "x", "xy", "token=", "export T=\""] {
            let text = format!("{prefix}{secret}\n");
            let encoded = b64(text.as_bytes());
            assert!(
                forms
                    .iter()
                    .any(|f| f.encoding == "base64" && encoded.contains(&f.form)),
                "prefix {prefix:?}: {encoded}"
            );
            let url_safe = encoded.replace('+', "-").replace('/', "_");
            assert!(forms.iter().any(|f| url_safe.contains(&f.form)));
        }
    }

    #[test]
    fn hex_url_and_reversed() {
        let forms = encoded_forms("p@ss w0rd!", 6);
        let has = |enc: &str, form: &str| forms.iter().any(|f| f.encoding == enc && f.form == form);
        assert!(has("hex", "70407373207730726421"));
        assert!(has(
            "hex",
            "70407373207730726421".to_ascii_uppercase().as_str()
        ));
        assert!(has("url", "p%40ss%20w0rd%21"));
        assert!(has("reversed", "!dr0w ss@p"));
        // A value with nothing to percent-encode has no `url` form.
        assert_eq!(
            encoded_forms("abcdefgh", 6)
                .iter()
                .filter(|f| f.encoding == "url")
                .count(),
            0
        );
    }
}

//! The forms a planted secret takes in the hostile tests of the secret scan and
//! the masking of every artefact: the eleven encodings an agent (or a plan) may
//! write a secret in, plus the split forms (string concatenation, `\xNN`).
//! Each form is a piece of text holding [`SECRET`] (the value of [`SECRET_VAR`])
//! and never the value itself as written, except the raw form.

/// The variable the secret comes from (a secret by its name).
pub const SECRET_VAR: &str = "MY_SERVICE_TOKEN";

/// A value with characters that percent-encoding changes, long enough that a
/// base64 text wrapped at 76 columns cuts its encoded form.
pub const SECRET: &str = "Qv7#Lm2@xR9!pT4$kW8zN3";

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(STD[((v >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `(name, text)` for every form of `secret`, each a line or lines of a file.
pub fn forms(secret: &str) -> Vec<(&'static str, String)> {
    let bytes = secret.as_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let quoted: String = bytes
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let all_percent: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
    let u_escapes: String = secret
        .chars()
        .map(|c| format!("\\u{:04x}", u32::from(c)))
        .collect();
    let x_escapes: String = bytes.iter().map(|b| format!("\\x{b:02x}")).collect();
    let reversed: String = secret.chars().rev().collect();
    let (head, tail) = secret.split_at(secret.len() / 2);
    // A long text before the secret puts its base64 across the 76th column.
    let long = format!("{}{secret} trailing text\n", "preamble ".repeat(6));
    let wrapped = base64(long.as_bytes())
        .as_bytes()
        .chunks(76)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    vec![
        ("raw", format!("value {secret} end")),
        ("base64", base64(format!("token={secret}").as_bytes())),
        ("hex", format!("blob = {hex}")),
        ("reversed", format!("r = {reversed}")),
        ("url_quoted", format!("https://x.example/?q={quoted}&a=1")),
        (
            "json",
            format!("{{\"service\": {{\"credential\": \"{secret}\"}}}}"),
        ),
        ("password_assignment", format!("password={secret}")),
        ("split_lines", format!("{head}\n{tail}")),
        ("percent_encoded", format!("payload={all_percent}")),
        ("json_unicode", format!("{{\"v\": \"{u_escapes}\"}}")),
        ("base64_wrapped", wrapped),
        (
            "concatenated",
            format!("value = (\"{head}\" +\n         \"{tail}\")"),
        ),
        ("hex_escapes", format!("s = \"{x_escapes}\"")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_form_but_raw_json_and_assignment_shows_the_secret() {
        for (name, text) in forms(SECRET) {
            let shown = text.contains(SECRET);
            assert_eq!(
                shown,
                matches!(name, "raw" | "json" | "password_assignment"),
                "{name}: {text}"
            );
        }
        // The wrap cuts the line the secret's encoded form would be on.
        let wrapped = forms(SECRET)
            .into_iter()
            .find(|(n, _)| *n == "base64_wrapped")
            .unwrap()
            .1;
        assert!(wrapped.lines().count() > 1);
        assert!(wrapped.lines().all(|l| l.len() <= 76));
    }
}

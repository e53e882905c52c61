//! Target parsing and `--since` (the figures themselves are checked end to end in
//! the CLI's `metrics` test over generated histories).

use dandori_obs::metrics::{meets, parse_since};

#[test]
fn seed_targets_are_read_as_written() {
    assert!(meets("80%", 0.8) && !meets("80%", 0.79));
    assert!(meets("<30%", 0.29) && !meets("<30%", 0.3));
    assert!(meets(">90%", 0.91) && !meets(">90%", 0.9));
    assert!(meets("<1.5", 1.0) && !meets("<1.5", 1.5));
    assert!(!meets("not a target", 1.0));
}

#[test]
fn since_accepts_rfc3339_and_dates_only() {
    assert_eq!(
        parse_since("2026-01-02").unwrap().to_rfc3339(),
        "2026-01-02T00:00:00+00:00"
    );
    assert_eq!(
        parse_since("2026-01-02T03:04:05+09:00")
            .unwrap()
            .to_rfc3339(),
        "2026-01-01T18:04:05+00:00"
    );
    let e = parse_since("yesterday").unwrap_err();
    assert!(e.to_string().contains("SINCE_INVALID"));
}
